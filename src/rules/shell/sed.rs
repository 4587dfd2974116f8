//! Whether a `sed` script runs commands: GNU sed's `e` command runs a shell command, and so
//! does the `e` flag of `s///`. The script is read command by command as sed reads it —
//! addresses (`3`, `$`, `/re/`, `\cREc`, `first~step`, ranges, `!`), then the command letter
//! and what it takes — so the `e` in `s/hello/world/` is text, not a command. A command the
//! scanner does not know counts as one that runs something.

/// Whether `script` (one sed script, perhaps of several lines) may run a command.
pub(super) fn runs_commands(script: &str) -> bool {
    let mut scan = Scan {
        chars: script.chars().collect(),
        at: 0,
    };
    scan.runs()
}

/// A position in a script being read.
struct Scan {
    chars: Vec<char>,
    at: usize,
}

impl Scan {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek();
        self.at += 1;
        c
    }

    /// Reads every command; whether one may run something.
    fn runs(&mut self) -> bool {
        loop {
            while self.peek().is_some_and(|c| c.is_whitespace() || c == ';') {
                self.at += 1;
            }
            if self.peek().is_none() {
                return false;
            }
            if !self.address() || self.command() {
                return true;
            }
        }
    }

    /// Skips an address and `!`; false when it does not read as one.
    fn address(&mut self) -> bool {
        loop {
            match self.peek() {
                Some(c) if c.is_ascii_digit() || "$,~! \t".contains(c) => self.at += 1,
                Some('/') => {
                    self.at += 1;
                    if !self.delimited('/') {
                        return false;
                    }
                    while self.peek().is_some_and(|c| c == 'I' || c == 'M') {
                        self.at += 1;
                    }
                }
                Some('\\') => {
                    self.at += 1;
                    let Some(delimiter) = self.next() else {
                        return false;
                    };
                    if !self.delimited(delimiter) {
                        return false;
                    }
                }
                _ => return true,
            }
        }
    }

    /// Skips to just past the next unescaped `delimiter`; false when there is none.
    fn delimited(&mut self, delimiter: char) -> bool {
        while let Some(c) = self.next() {
            if c == '\\' {
                self.at += 1;
            } else if c == delimiter {
                return true;
            }
        }
        false
    }

    /// Skips to the end of the line (a command's text, file name or label).
    fn rest_of_line(&mut self) {
        while self.next().is_some_and(|c| c != '\n') {}
    }

    /// Skips a command's text: to the end of the line, and on over every line that ends
    /// with a backslash (`a\`, then the text).
    fn text(&mut self) {
        loop {
            let mut last = None;
            while let Some(c) = self.next() {
                if c == '\n' {
                    break;
                }
                last = Some(c);
            }
            if last != Some('\\') {
                return;
            }
        }
    }

    /// Skips to the end of a label or a number: `;`, `}` or the line's end.
    fn argument(&mut self) {
        while self
            .peek()
            .is_some_and(|c| c != ';' && c != '\n' && c != '}')
        {
            self.at += 1;
        }
    }

    /// Reads one command; whether it may run something.
    fn command(&mut self) -> bool {
        match self.next() {
            Some('{' | '}' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P')
            | Some('x' | 'z' | 'F') => false,
            Some('a' | 'i' | 'c') => {
                self.text();
                false
            }
            Some('#' | ':' | 'r' | 'R' | 'w' | 'W') => {
                self.rest_of_line();
                false
            }
            Some('b' | 't' | 'T' | 'q' | 'Q' | 'l' | 'L' | 'v') => {
                self.argument();
                false
            }
            Some('s') => self.substitution(),
            Some('y') => {
                let Some(delimiter) = self.next() else {
                    return true;
                };
                !(self.delimited(delimiter) && self.delimited(delimiter))
            }
            // `e`, and anything the scanner does not know.
            _ => true,
        }
    }

    /// `s/RE/REPLACEMENT/FLAGS`: whether its flags run the pattern space (`e`).
    fn substitution(&mut self) -> bool {
        let Some(delimiter) = self.next() else {
            return true;
        };
        if !(self.delimited(delimiter) && self.delimited(delimiter)) {
            return true;
        }
        while let Some(flag) = self.peek() {
            match flag {
                'e' => return true,
                'w' => {
                    self.rest_of_line();
                    return false;
                }
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.at += 1,
                c if c.is_ascii_digit() => self.at += 1,
                _ => return false,
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_e_command_and_flag_run_commands() {
        for quiet in [
            "s/hello/world/",
            "s/x/e/g",
            "1,3{p;d}",
            "/re/!d",
            "\\%e%p",
            "y/abc/xyz/",
            "$a\\\nend",
            "s,a,b,w out.txt",
            "2q",
            ":loop\nN\nb loop",
            "/e/ s/e/E/2p",
        ] {
            assert!(!runs_commands(quiet), "{quiet:?}");
        }
        for runs in [
            "e touch y",
            "1e touch y",
            "s/x/touch y/e",
            "s/x/y/ge",
            "p;e",
            "/x/{e\n}",
            "s/unterminated",
            "K",
        ] {
            assert!(runs_commands(runs), "{runs:?}");
        }
    }
}

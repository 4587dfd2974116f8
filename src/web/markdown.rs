//! A page's HTML written as Markdown for the model: headings, paragraphs, links, images,
//! emphasis, code and fenced blocks, nested lists, quotes and tables, with what is not the
//! page's text (scripts, styles, embedded documents) left out.
//!
//! Built by hand on `html`'s tokens (see there why not on html5ever): one pass, an explicit stack
//! of open elements closed as the standard's tree builder closes the common ones (`<p>`, `<li>`,
//! `<td>`, `<tr>`, `<dt>`, `<dd>` without their end tags), no recursion, and a bound on the
//! depth it keeps — a page can make the conversion neither overflow a stack nor grow without end.

use super::html::{Token, tokens};

/// The elements whose content is not the page's text: code, styles and embedded documents.
const SKIPPED: [&str; 9] = [
    "head", "script", "style", "noscript", "template", "svg", "iframe", "object", "select",
];

/// The elements that have no content and no end tag.
const VOID: [&str; 14] = [
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// The elements a `<p>` does not reach past when a block closes it implicitly.
const P_BOUNDARY: [&str; 8] = [
    "div",
    "li",
    "td",
    "th",
    "blockquote",
    "table",
    "section",
    "article",
];

/// The block elements that close an open `<p>`, as in the standard.
const CLOSES_P: [&str; 29] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "details",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "ul",
];

/// Containers written as their own lines, without the blank line of a paragraph.
const LINE_BLOCKS: [&str; 18] = [
    "div",
    "section",
    "article",
    "main",
    "header",
    "footer",
    "nav",
    "aside",
    "address",
    "figure",
    "figcaption",
    "form",
    "fieldset",
    "details",
    "summary",
    "center",
    "dt",
    "dd",
];

/// How deep the open elements are kept; a start tag deeper than this is read as text's
/// container only (its text kept, its markup not).
const MAX_DEPTH: usize = 512;

/// `page` as Markdown.
pub(super) fn convert(page: &str) -> String {
    let mut converter = Converter {
        frames: vec![Frame::default()],
        ..Converter::default()
    };
    for token in tokens(page) {
        converter.token(token);
    }
    converter.finish()
}

/// Text being written: the document, or a capture (a link's text, a heading, a table cell, a
/// `<pre>`) that its element writes into its parent once it closes.
#[derive(Default)]
struct Frame {
    text: String,
    /// What each line starts with inside the open quotes and list items.
    prefixes: Vec<String>,
    /// Line breaks wanted before the next text: 1 a new line, 2 a blank line.
    breaks: usize,
    /// How many prefixes were open when the breaks were first wanted: a blank line before a
    /// quote is not part of it.
    break_depth: usize,
    /// Just after a list item's marker: a block inside the item starts on the marker's line.
    fresh_item: bool,
    /// A space wanted before the next text.
    space: bool,
    /// Whitespace came before any text (kept around a capture: `a <b>b</b>`).
    leading_space: bool,
    /// Inside `<pre>`: whitespace as written.
    verbatim: bool,
    /// A fenced block's language (`class="language-rust"`).
    language: Option<String>,
}

impl Frame {
    fn verbatim() -> Frame {
        Frame {
            verbatim: true,
            ..Frame::default()
        }
    }

    /// At least `breaks` line breaks before what comes next.
    fn block(&mut self, breaks: usize) {
        if self.fresh_item {
            return;
        }
        self.break_depth = if self.breaks == 0 {
            self.prefixes.len()
        } else {
            self.break_depth.min(self.prefixes.len())
        };
        self.breaks = self.breaks.max(breaks);
        self.space = false;
    }

    /// Page text: runs of whitespace one space, none at the start of a line.
    fn words(&mut self, text: &str) {
        if self.verbatim {
            self.text.push_str(text);
            return;
        }
        for c in text.chars() {
            if c.is_whitespace() && c != '\u{a0}' {
                if self.text.is_empty() && self.breaks == 0 {
                    self.leading_space = true;
                } else if !self.at_line_start() && self.breaks == 0 {
                    self.space = true;
                }
            } else {
                self.flush();
                self.text.push(c);
            }
        }
    }

    /// Markdown of zero's own (a marker, a link): written as it is, after what is pending.
    fn markup(&mut self, markup: &str) {
        self.flush();
        self.text.push_str(markup);
    }

    /// Lines written each behind the prefix (a fenced block's content).
    fn lines(&mut self, lines: &str) {
        for line in lines.split('\n') {
            self.text.push('\n');
            let prefix = self.prefixes.concat();
            self.text.push_str(if line.is_empty() {
                prefix.trim_end()
            } else {
                &prefix
            });
            self.text.push_str(line);
        }
    }

    fn at_line_start(&self) -> bool {
        self.text.is_empty() || self.text.ends_with('\n')
    }

    /// The pending line breaks, prefix and space written.
    fn flush(&mut self) {
        if self.breaks > 0 && !self.text.is_empty() {
            let blank = self.prefixes[..self.break_depth.min(self.prefixes.len())].concat();
            for _ in 1..self.breaks {
                self.text.push('\n');
                self.text.push_str(blank.trim_end());
            }
            self.text.push('\n');
        }
        if self.at_line_start() {
            self.text.push_str(&self.prefixes.concat());
        } else if self.space && !self.text.ends_with(' ') {
            self.text.push(' ');
        }
        self.breaks = 0;
        self.space = false;
        self.fresh_item = false;
    }

    /// The capture's text on one line.
    fn inline(&self) -> String {
        self.text.split_whitespace().collect::<Vec<_>>().join(" ")
    }
}

/// What an open element does when it closes.
enum Close {
    Nothing,
    /// Line breaks after it.
    Block(usize),
    /// A quote's or list item's prefix taken off, then line breaks.
    Prefix(usize),
    /// A list ended.
    List,
    /// A table written.
    Table,
    /// A capture written into its parent.
    Capture(Capture),
}

/// What a capture becomes.
enum Capture {
    Heading(usize),
    Link(String),
    Emphasis(&'static str),
    Code,
    Pre,
    Cell { header: bool },
}

struct Open {
    name: String,
    close: Close,
}

/// A list being written: its kind and the next item's number.
struct List {
    ordered: bool,
    next: u64,
}

/// A table being collected, written when it closes.
#[derive(Default)]
struct Table {
    rows: Vec<Vec<String>>,
    header: bool,
}

#[derive(Default)]
struct Converter {
    frames: Vec<Frame>,
    open: Vec<Open>,
    lists: Vec<List>,
    tables: Vec<Table>,
    /// Inside a skipped element: its name and how many of it are open.
    skipping: Option<(String, usize)>,
    /// Start tags past `MAX_DEPTH` still open.
    too_deep: usize,
}

impl Converter {
    /// The frame being written: the innermost capture's, else the document's (never popped:
    /// only a capture's own element pops a frame).
    fn frame(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the document's frame is never popped")
    }

    fn token(&mut self, token: Token) {
        if self.skipped(&token) {
            return;
        }
        match token {
            Token::Text(text) => self.frame().words(&text),
            Token::End { name } => self.end(&name),
            Token::Start { .. } => self.start(&token),
        }
    }

    /// Whether `token` is inside a skipped element (or starts one).
    fn skipped(&mut self, token: &Token) -> bool {
        match (&mut self.skipping, token) {
            // A `<head>` whose end tag was left out ends where the body starts.
            (Some((skipped, _)), Token::Start { name, .. })
                if skipped == "head" && name == "body" =>
            {
                self.skipping = None;
                false
            }
            (
                Some((skipped, depth)),
                Token::Start {
                    name, self_closing, ..
                },
            ) => {
                if name == skipped && !self_closing {
                    *depth += 1;
                }
                true
            }
            (Some((skipped, depth)), Token::End { name }) => {
                if name == skipped {
                    *depth -= 1;
                    if *depth == 0 {
                        self.skipping = None;
                    }
                }
                true
            }
            (Some(_), Token::Text(_)) => true,
            (
                None,
                Token::Start {
                    name, self_closing, ..
                },
            ) if SKIPPED.contains(&name.as_str()) => {
                if !self_closing {
                    self.skipping = Some((name.clone(), 1));
                }
                true
            }
            (None, _) => false,
        }
    }

    fn start(&mut self, token: &Token) {
        let Token::Start {
            name, self_closing, ..
        } = token
        else {
            return;
        };
        let name = name.as_str();
        self.close_implied_by(name);
        if VOID.contains(&name) {
            self.void(name, token);
            return;
        }
        if *self_closing {
            return;
        }
        if self.open.len() >= MAX_DEPTH {
            self.too_deep += 1;
            return;
        }
        let close = self.open_element(name, token);
        self.open.push(Open {
            name: name.to_string(),
            close,
        });
    }

    /// The elements a start tag `name` closes without their end tags.
    fn close_implied_by(&mut self, name: &str) {
        let (closed, boundary): (&[&str], &[&str]) = match name {
            "li" => (&["li"], &["ul", "ol"]),
            "dt" | "dd" => (&["dt", "dd"], &["dl"]),
            "tr" => (&["tr"], &["table"]),
            "td" | "th" => (&["td", "th"], &["tr", "table"]),
            "thead" | "tbody" | "tfoot" => (&["thead", "tbody", "tfoot"], &["table"]),
            _ if CLOSES_P.contains(&name) => (&["p"], &P_BOUNDARY),
            _ => return,
        };
        let found = self
            .open
            .iter()
            .rev()
            .take_while(|open| !boundary.contains(&open.name.as_str()))
            .position(|open| closed.contains(&open.name.as_str()));
        if let Some(from_top) = found {
            self.close_to(self.open.len() - 1 - from_top);
        }
    }

    /// `<br>`, `<hr>`, `<img>`: written at once.
    fn void(&mut self, name: &str, token: &Token) {
        let frame = self.frame();
        match name {
            "br" if frame.verbatim => frame.text.push('\n'),
            "br" => {
                frame.flush();
                frame.block(1);
            }
            "hr" => {
                frame.block(2);
                frame.markup("---");
                frame.block(2);
            }
            "img" => {
                let source = token.attribute("src").unwrap_or_default().trim();
                if !source.is_empty() {
                    let alt = token.attribute("alt").unwrap_or_default();
                    let alt = alt.split_whitespace().collect::<Vec<_>>().join(" ");
                    frame.markup(&format!("![{alt}]({})", link_target(source)));
                }
            }
            _ => {}
        }
    }

    /// An element opened: what it writes now, and what it does when it closes.
    fn open_element(&mut self, name: &str, token: &Token) -> Close {
        let verbatim = self.frame().verbatim;
        match name {
            "p" => {
                self.frame().block(2);
                Close::Block(2)
            }
            _ if LINE_BLOCKS.contains(&name) => {
                self.frame().block(1);
                Close::Block(1)
            }
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => {
                self.frame().block(2);
                self.capture(Frame::default());
                Close::Capture(Capture::Heading(usize::from(name.as_bytes()[1] - b'0')))
            }
            "ul" | "ol" => {
                let nested = !self.lists.is_empty();
                self.frame().block(if nested { 1 } else { 2 });
                let start = token.attribute("start").and_then(|n| n.trim().parse().ok());
                self.lists.push(List {
                    ordered: name == "ol",
                    next: start.unwrap_or(1),
                });
                Close::List
            }
            "li" => self.list_item(),
            "blockquote" => {
                let frame = self.frame();
                frame.block(2);
                frame.prefixes.push("> ".to_string());
                Close::Prefix(2)
            }
            "pre" => {
                self.frame().block(2);
                let mut pre = Frame::verbatim();
                pre.language = language(token);
                self.capture(pre);
                Close::Capture(Capture::Pre)
            }
            "code" if verbatim => {
                let language = language(token);
                let frame = self.frame();
                frame.language = frame.language.take().or(language);
                Close::Nothing
            }
            "code" | "kbd" | "samp" | "tt" => self.inline_capture(Capture::Code),
            "a" => {
                let target = token
                    .attribute("href")
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                self.inline_capture(Capture::Link(target))
            }
            "strong" | "b" => self.inline_capture(Capture::Emphasis("**")),
            "em" | "i" | "cite" => self.inline_capture(Capture::Emphasis("*")),
            "del" | "s" | "strike" => self.inline_capture(Capture::Emphasis("~~")),
            "table" => {
                self.frame().block(2);
                self.tables.push(Table::default());
                Close::Table
            }
            "tr" => {
                if let Some(table) = self.tables.last_mut() {
                    table.rows.push(Vec::new());
                }
                Close::Nothing
            }
            "td" | "th" if !self.tables.is_empty() => {
                self.capture(Frame::default());
                Close::Capture(Capture::Cell {
                    header: name == "th",
                })
            }
            _ => Close::Nothing,
        }
    }

    /// `<li>`: its marker, and its content's lines indented under it.
    fn list_item(&mut self) -> Close {
        let marker = match self.lists.last_mut() {
            Some(List {
                ordered: true,
                next,
            }) => {
                let marker = format!("{next}. ");
                *next += 1;
                marker
            }
            _ => "- ".to_string(),
        };
        let frame = self.frame();
        frame.block(1);
        frame.markup(&marker);
        frame.fresh_item = true;
        frame.prefixes.push(" ".repeat(marker.len()));
        Close::Prefix(1)
    }

    /// An inline capture; inside `<pre>` nothing (its text is the block's).
    fn inline_capture(&mut self, capture: Capture) -> Close {
        if self.frame().verbatim {
            return Close::Nothing;
        }
        self.capture(Frame::default());
        Close::Capture(capture)
    }

    fn capture(&mut self, frame: Frame) {
        self.frames.push(frame);
    }

    /// `</name>`: the open elements down to the last `name` closed; nothing when none is open.
    fn end(&mut self, name: &str) {
        if self.too_deep > 0 {
            self.too_deep -= 1;
            return;
        }
        if name == "br" {
            self.frame().block(1);
            return;
        }
        if let Some(at) = self.open.iter().rposition(|open| open.name == name) {
            self.close_to(at);
        }
    }

    /// The open elements from the top down to index `at` closed.
    fn close_to(&mut self, at: usize) {
        while self.open.len() > at {
            let Some(open) = self.open.pop() else {
                return;
            };
            self.close(open.close);
        }
    }

    fn close(&mut self, close: Close) {
        match close {
            Close::Nothing => {}
            Close::Block(breaks) => self.frame().block(breaks),
            Close::Prefix(breaks) => {
                let frame = self.frame();
                frame.prefixes.pop();
                frame.block(breaks);
            }
            Close::List => {
                self.lists.pop();
                let nested = !self.lists.is_empty();
                self.frame().block(if nested { 1 } else { 2 });
            }
            Close::Table => {
                if let Some(table) = self.tables.pop() {
                    write_table(self.frame(), &table);
                }
            }
            Close::Capture(capture) => {
                let captured = self.frames.pop().unwrap_or_default();
                self.write_capture(capture, &captured);
            }
        }
    }

    /// A closed capture written into the frame under it.
    fn write_capture(&mut self, capture: Capture, captured: &Frame) {
        let text = captured.inline();
        if let Capture::Cell { header } = capture {
            // A cell is captured only inside a table; one before any `<tr>` opens a row.
            if let Some(table) = self.tables.last_mut() {
                if table.rows.is_empty() {
                    table.rows.push(Vec::new());
                }
                table.header |= header && table.rows.len() == 1;
                if let Some(row) = table.rows.last_mut() {
                    row.push(text.replace('|', "\\|"));
                }
            }
            return;
        }
        let frame = self.frame();
        if captured.leading_space {
            frame.words(" ");
        }
        match capture {
            Capture::Heading(level) if !text.is_empty() => {
                frame.markup(&format!("{} {text}", "#".repeat(level)));
                frame.block(2);
            }
            Capture::Link(target) if !text.is_empty() => {
                if target.is_empty() || target.to_ascii_lowercase().starts_with("javascript:") {
                    frame.markup(&text);
                } else {
                    frame.markup(&format!("[{text}]({})", link_target(&target)));
                }
            }
            Capture::Emphasis(marker) if !text.is_empty() => {
                frame.markup(&format!("{marker}{text}{marker}"));
            }
            Capture::Code if !text.is_empty() => frame.markup(&inline_code(&text)),
            Capture::Pre => write_fenced(frame, captured),
            _ => {}
        }
        if captured.space && !text.is_empty() {
            frame.words(" ");
        }
    }

    fn finish(mut self) -> String {
        self.too_deep = 0;
        self.close_to(0);
        let mut text = std::mem::take(&mut self.frame().text);
        text.truncate(text.trim_end().len());
        text
    }
}

/// `<pre>`'s text as a fenced block, the fence longer than any run of backticks inside.
fn write_fenced(frame: &mut Frame, pre: &Frame) {
    let body = pre.text.strip_prefix('\n').unwrap_or(&pre.text);
    let body = body.trim_end_matches(['\n', ' ', '\t', '\r']);
    if body.trim().is_empty() {
        return;
    }
    let fence = "`".repeat(longest_run(body, '`').max(2) + 1);
    frame.block(2);
    frame.markup(&format!(
        "{fence}{}",
        pre.language.as_deref().unwrap_or_default()
    ));
    frame.lines(body);
    frame.lines(&fence);
    frame.block(2);
}

/// Inline code, its backticks longer than any run inside.
fn inline_code(text: &str) -> String {
    let ticks = "`".repeat(longest_run(text, '`') + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

fn longest_run(text: &str, of: char) -> usize {
    text.split(|c| c != of).map(str::len).max().unwrap_or(0)
}

/// A table as GitHub's Markdown: the first row the header (the page's `<th>`s, or its first
/// row when it has none), the rows padded to the widest.
fn write_table(frame: &mut Frame, table: &Table) {
    let rows: Vec<&Vec<String>> = table.rows.iter().filter(|row| !row.is_empty()).collect();
    let columns = rows.iter().map(|row| row.len()).max().unwrap_or(0);
    if columns == 0 {
        return;
    }
    let line = |row: &[String]| {
        let cells = (0..columns).map(|at| row.get(at).map_or("", String::as_str));
        format!("| {} |", cells.collect::<Vec<_>>().join(" | "))
    };
    frame.block(2);
    for (at, row) in rows.iter().enumerate() {
        frame.markup(&line(row));
        frame.block(1);
        if at == 0 {
            frame.markup(&line(&vec!["---".to_string(); columns]));
            frame.block(1);
        }
    }
    frame.block(2);
}

/// A link's target as Markdown writes it: in angle brackets when it holds a space or a
/// parenthesis that would end it.
fn link_target(target: &str) -> String {
    if target.contains([' ', '(', ')', '<', '>']) {
        format!("<{}>", target.replace('<', "%3C").replace('>', "%3E"))
    } else {
        target.to_string()
    }
}

/// A `<pre>`'s or `<code>`'s language, from `class="language-x"` or `class="lang-x"`.
fn language(token: &Token) -> Option<String> {
    token
        .attribute("class")?
        .split_whitespace()
        .find_map(|class| {
            class
                .strip_prefix("language-")
                .or_else(|| class.strip_prefix("lang-"))
                .map(str::to_string)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_elements_become_their_markdown() {
        let page = "<html><head><title>T</title><script>x()</script></head><body>\
            <h1>Title</h1><p>Some <a href=\"/a\">link</a>, <b>bold</b> and <em>soft</em> \
            <code>x`y</code>.</p><img src=\"/i.png\" alt=\"A picture\"><hr>\
            <blockquote><p>quoted</p><p>twice</p></blockquote></body></html>";
        assert_eq!(
            convert(page),
            "# Title\n\nSome [link](/a), **bold** and *soft* ``x`y``.\n\n\
             ![A picture](/i.png)\n\n---\n\n> quoted\n>\n> twice"
        );
    }

    #[test]
    fn lists_nest_and_number_and_items_close_without_their_end_tags() {
        let page = "<ul><li>one<li>two<ul><li>two a</ul><li>three</ul>\
            <ol start=3><li><p>third</p><li>fourth</ol>";
        assert_eq!(
            convert(page),
            "- one\n- two\n  - two a\n- three\n\n3. third\n\n4. fourth"
        );
    }

    #[test]
    fn a_pre_is_a_fenced_block_with_its_language_and_whitespace() {
        let page = "<p>Run:</p><pre><code class=\"language-sh\">\ncargo  test\n  --all\n\
            </code></pre><ul><li><pre>in a list</pre></li></ul>";
        assert_eq!(
            convert(page),
            "Run:\n\n```sh\ncargo  test\n  --all\n```\n\n- ```\n  in a list\n  ```"
        );
        assert_eq!(convert("<pre>a ``` b</pre>"), "````\na ``` b\n````");
    }

    #[test]
    fn a_table_becomes_a_github_table() {
        let page = "<table><thead><tr><th>Name<th>Use</thead>\
            <tr><td>zero</td><td>a | b</td></tr><tr><td>only one</table>";
        assert_eq!(
            convert(page),
            "| Name | Use |\n| --- | --- |\n| zero | a \\| b |\n| only one |  |"
        );
        // Cells without a row: the row is implied.
        assert_eq!(
            convert("<table><td>a<td>b</table>"),
            "| a | b |\n| --- | --- |"
        );
    }

    #[test]
    fn what_is_not_the_pages_text_is_left_out() {
        let page = "<p>kept</p><svg><svg/><text>drawn</text></svg><noscript>no</noscript>\
            <template><p>later</p></template><select><option>o</select><p>also kept";
        assert_eq!(convert(page), "kept\n\nalso kept");
        assert_eq!(
            convert("<a href=\"javascript:x()\">click</a> <a href=\"/x\"></a>"),
            "click"
        );
    }

    #[test]
    fn whitespace_collapses_and_spaces_around_inline_elements_stay() {
        assert_eq!(
            convert("<p>\n  a   <b> bold </b>\n word<br>next &nbsp;line</p>"),
            "a **bold** word\nnext \u{a0}line"
        );
        assert_eq!(
            convert("<a href=\"/a b\">x</a><a href=\"/(c)\">y</a>"),
            "[x](</a b>)[y](</(c)>)"
        );
    }

    #[test]
    fn a_hostile_depth_neither_overflows_nor_loses_the_text() {
        let page = format!(
            "{}deep{}",
            "<div><span>".repeat(100_000),
            "</span></div>".repeat(100_000)
        );
        assert_eq!(convert(&page), "deep");
        let page = format!("{}deep", "<blockquote>".repeat(100_000));
        assert!(convert(&page).ends_with("> deep"));
        assert!(convert("</p></li></table>").is_empty());
    }
}


use builtin;
use str;

set edit:completion:arg-completer[zero] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'zero'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'zero'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand exec 'Run one agent job headlessly and exit with a code a script can act on'
            cand review 'Review a change read-only and report findings where CI shows them (text, JSON, SARIF, GitHub annotations, GitLab Code Quality, a Markdown comment)'
            cand tasks 'Inspect, follow, stop and clean up background tasks and specialists of every run'
            cand sessions 'List, show and clean up the sessions `zero exec --resume` continues'
            cand worktrees 'List, show and clean up the worktrees `zero exec --worktree` made'
            cand __generate 'Write shell completions and man pages (used to refresh the committed copies)'
        }
        &'zero;exec'= {
            cand -p 'Prompt text (repeatable; joined with the positional words in argv order)'
            cand --prompt 'Prompt text (repeatable; joined with the positional words in argv order)'
            cand -f 'Read (more of) the prompt from a file, appended after a blank line'
            cand --file 'Read (more of) the prompt from a file, appended after a blank line'
            cand --image 'Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and 8000×8000 px'
            cand -C 'Workspace root (default: the current directory)'
            cand --cwd 'Workspace root (default: the current directory)'
            cand --worktree 'Run in a new git worktree of the workspace''s repository, on the branch `zero/NAME` (NAME defaults to a fresh id); at the end the changes are committed there, the worktree directory is removed and the branch is kept. Write it `--worktree=NAME` before a prompt word'
            cand --add-dir 'An extra directory the agent may write to (repeatable)'
            cand --auto 'How much the agent may do without asking: low = read only, medium = edit files in the workspace and run commands, high = everything'
            cand --sandbox 'The kernel sandbox for commands: auto = apply what the kernel supports and warn about the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto, or `sandbox` in config.toml]'
            cand --env-keep 'Pass this variable to commands although its name looks like a secret (repeatable; `env_keep` in config.toml adds more)'
            cand --enabled-tools 'Only these tools are offered to the model (comma or space separated)'
            cand --disabled-tools 'These tools are never offered to the model (comma or space separated)'
            cand --allow 'A permission rule: calls of the tool it names run only when an allow rule matches them (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`, `mcp__github__*`, or Claude Code''s `Bash(git log:*)`. Rules only narrow what --auto grants'
            cand --deny 'A permission rule: calls it matches are denied, whatever allows them (repeatable): `bash(git push *)`, `write_file(.github/**)`'
            cand --rules 'Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML, or a Claude Code settings.json (its `ask` rules are denied). A workspace''s own files are never read without it'
            cand --mcp-config 'Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their tools are offered as `mcp__SERVER__TOOL`'
            cand --hooks 'Run the hooks this file configures, besides config.toml''s `[hooks]` (repeatable): TOML or JSON in zero''s shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json (`{"hooks": {"PreToolUse": [...]}}`). A workspace''s own files are never read without it'
            cand -o 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line'
            cand --output-format 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line'
            cand -i 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)'
            cand --input-format 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)'
            cand --output-last-message 'Also write the final answer to this file (atomically), in every output format'
            cand --output-schema 'A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then one JSON value, printed compact on one line. No valid answer: exit 4'
            cand --schema-retries 'How many times an answer that misses --output-schema goes back to the model with the errors [default: 2]'
            cand --verify 'A check that must pass for the run to succeed (repeatable; also `verify` in config.toml or the --rules file): a command run in the workspace when the model gives its final answer. One that fails goes back to the model with its exit code and the end of its output, up to --verify-retries times; never passing is exit 4'
            cand --verify-timeout 'How long one check may run before it is stopped with everything it started [default: 10m, or `verify_timeout` in config.toml]'
            cand --verify-retries 'How many times a check that fails goes back to the model [default: 2, or `verify_retries` in config.toml]'
            cand -m 'Model name, as the provider knows it'
            cand --model 'Model name, as the provider knows it'
            cand --provider 'Which wire protocol the endpoint speaks'
            cand --base-url 'Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1)'
            cand --max-output-tokens 'The most tokens the model may produce in one response [default: 8192, or `max_output_tokens` in config.toml]. A response cut there is reported as a warning'
            cand --reasoning-effort 'How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI''s `reasoning_effort`, or Anthropic''s extended thinking with a budget of 1024, 2048, 8192, 16384 or 32768 tokens. A server that refuses it is asked again without it, with a warning'
            cand --fallback-model 'A model to turn to when the current one stays overloaded, rate-limited, unreachable or unknown after its retries; repeat for more, tried in order (also `fallback_models` in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`, `openai:…`), reached through that wire''s own variables'
            cand --timeout 'A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also `timeout` in config.toml). When it passes everything is stopped and the run exits 4'
            cand --max-tokens 'A token budget (input plus output) for the whole run, children included (also `max_tokens` in config.toml). The response that passes it ends the run: exit 4'
            cand --max-cost-usd 'A budget in US dollars for the whole run, children included (also `max_cost_usd` in config.toml); needs the model''s price in the `[prices]` table of config.toml'
            cand --context-window 'The model''s context window in tokens, when the server does not report it and zero''s table does not know the model (also `context_window` in config.toml) [default: 128000]'
            cand --prompt-style 'The system prompt and tool list: `compact` (a short prompt and the tools a small model uses well) or `full` (also `prompt_style` in config.toml) [default: compact for `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else full]'
            cand --resume 'Continue a session: its conversation, then this prompt. `last` is this workspace''s most recent session'
            cand --fork 'Start a new session from a copy of this one''s conversation (it is left as it was)'
            cand --session-id 'The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`)'
            cand --max-turns 'Give up after this many model turns (exit 4)'
            cand --skip-permissions-unsafe 'Allow every tool, writes anywhere and any command (same as `--auto high`)'
            cand --network 'Let commands open network connections at --auto low and medium (`network = true` in config.toml does the same)'
            cand --mcp-project 'Also start the servers of the workspace''s own `.mcp.json` (never read without this: a checkout must not start the processes it names)'
            cand --strict-mcp-config 'Start only the servers of the --mcp-config files, none from config.toml or the workspace'
            cand --hooks-fail-open 'Let a call through when a hook fails (crashes, times out, prints what is not a reply) instead of denying it'
            cand --strict 'End the run with exit 4 when its work was blocked, after the answer is printed: a call refused by --auto, a rule or a hook, an MCP server that failed or went away, a specialist that failed, a call cut at the output limit and never made again (also `strict = true` in config.toml)'
            cand --no-session 'Keep no session: nothing of the conversation is written to the data directory'
            cand --any-workspace 'Let --resume continue a session that belongs to another workspace, in this one'
            cand --list-tools 'Print the tools the model would see under these flags, then exit'
            cand --list-specialists 'Print the specialists the `Task` tool can launch, then exit'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;review'= {
            cand --base 'Review the change from the merge base of REF and HEAD to the working tree [default: the branch''s upstream, else origin/HEAD]'
            cand --commit 'Review one commit (against its first parent)'
            cand --format 'How to write the findings: text, json, sarif, github, gitlab or markdown; `FORMAT=FILE` writes that format to FILE (atomically). Repeatable; what names no file goes to stdout'
            cand --fail-on 'The least severe finding that fails the review with exit code 5 (`never`: findings never fail it)'
            cand -p 'Prompt text (repeatable; joined with the positional words in argv order)'
            cand --prompt 'Prompt text (repeatable; joined with the positional words in argv order)'
            cand -f 'Read (more of) the prompt from a file, appended after a blank line'
            cand --file 'Read (more of) the prompt from a file, appended after a blank line'
            cand --image 'Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and 8000×8000 px'
            cand -C 'Workspace root (default: the current directory)'
            cand --cwd 'Workspace root (default: the current directory)'
            cand --worktree 'Run in a new git worktree of the workspace''s repository, on the branch `zero/NAME` (NAME defaults to a fresh id); at the end the changes are committed there, the worktree directory is removed and the branch is kept. Write it `--worktree=NAME` before a prompt word'
            cand --add-dir 'An extra directory the agent may write to (repeatable)'
            cand --auto 'How much the agent may do without asking: low = read only, medium = edit files in the workspace and run commands, high = everything'
            cand --sandbox 'The kernel sandbox for commands: auto = apply what the kernel supports and warn about the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto, or `sandbox` in config.toml]'
            cand --env-keep 'Pass this variable to commands although its name looks like a secret (repeatable; `env_keep` in config.toml adds more)'
            cand --enabled-tools 'Only these tools are offered to the model (comma or space separated)'
            cand --disabled-tools 'These tools are never offered to the model (comma or space separated)'
            cand --allow 'A permission rule: calls of the tool it names run only when an allow rule matches them (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`, `mcp__github__*`, or Claude Code''s `Bash(git log:*)`. Rules only narrow what --auto grants'
            cand --deny 'A permission rule: calls it matches are denied, whatever allows them (repeatable): `bash(git push *)`, `write_file(.github/**)`'
            cand --rules 'Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML, or a Claude Code settings.json (its `ask` rules are denied). A workspace''s own files are never read without it'
            cand --mcp-config 'Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their tools are offered as `mcp__SERVER__TOOL`'
            cand --hooks 'Run the hooks this file configures, besides config.toml''s `[hooks]` (repeatable): TOML or JSON in zero''s shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json (`{"hooks": {"PreToolUse": [...]}}`). A workspace''s own files are never read without it'
            cand -o 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line'
            cand --output-format 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line'
            cand -i 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)'
            cand --input-format 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)'
            cand --output-last-message 'Also write the final answer to this file (atomically), in every output format'
            cand --output-schema 'A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then one JSON value, printed compact on one line. No valid answer: exit 4'
            cand --schema-retries 'How many times an answer that misses --output-schema goes back to the model with the errors [default: 2]'
            cand --verify 'A check that must pass for the run to succeed (repeatable; also `verify` in config.toml or the --rules file): a command run in the workspace when the model gives its final answer. One that fails goes back to the model with its exit code and the end of its output, up to --verify-retries times; never passing is exit 4'
            cand --verify-timeout 'How long one check may run before it is stopped with everything it started [default: 10m, or `verify_timeout` in config.toml]'
            cand --verify-retries 'How many times a check that fails goes back to the model [default: 2, or `verify_retries` in config.toml]'
            cand -m 'Model name, as the provider knows it'
            cand --model 'Model name, as the provider knows it'
            cand --provider 'Which wire protocol the endpoint speaks'
            cand --base-url 'Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1)'
            cand --max-output-tokens 'The most tokens the model may produce in one response [default: 8192, or `max_output_tokens` in config.toml]. A response cut there is reported as a warning'
            cand --reasoning-effort 'How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI''s `reasoning_effort`, or Anthropic''s extended thinking with a budget of 1024, 2048, 8192, 16384 or 32768 tokens. A server that refuses it is asked again without it, with a warning'
            cand --fallback-model 'A model to turn to when the current one stays overloaded, rate-limited, unreachable or unknown after its retries; repeat for more, tried in order (also `fallback_models` in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`, `openai:…`), reached through that wire''s own variables'
            cand --timeout 'A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also `timeout` in config.toml). When it passes everything is stopped and the run exits 4'
            cand --max-tokens 'A token budget (input plus output) for the whole run, children included (also `max_tokens` in config.toml). The response that passes it ends the run: exit 4'
            cand --max-cost-usd 'A budget in US dollars for the whole run, children included (also `max_cost_usd` in config.toml); needs the model''s price in the `[prices]` table of config.toml'
            cand --context-window 'The model''s context window in tokens, when the server does not report it and zero''s table does not know the model (also `context_window` in config.toml) [default: 128000]'
            cand --prompt-style 'The system prompt and tool list: `compact` (a short prompt and the tools a small model uses well) or `full` (also `prompt_style` in config.toml) [default: compact for `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else full]'
            cand --resume 'Continue a session: its conversation, then this prompt. `last` is this workspace''s most recent session'
            cand --fork 'Start a new session from a copy of this one''s conversation (it is left as it was)'
            cand --session-id 'The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`)'
            cand --max-turns 'Give up after this many model turns (exit 4)'
            cand --uncommitted 'Review what is not committed yet (staged and unstaged, against HEAD)'
            cand --skip-permissions-unsafe 'Allow every tool, writes anywhere and any command (same as `--auto high`)'
            cand --network 'Let commands open network connections at --auto low and medium (`network = true` in config.toml does the same)'
            cand --mcp-project 'Also start the servers of the workspace''s own `.mcp.json` (never read without this: a checkout must not start the processes it names)'
            cand --strict-mcp-config 'Start only the servers of the --mcp-config files, none from config.toml or the workspace'
            cand --hooks-fail-open 'Let a call through when a hook fails (crashes, times out, prints what is not a reply) instead of denying it'
            cand --strict 'End the run with exit 4 when its work was blocked, after the answer is printed: a call refused by --auto, a rule or a hook, an MCP server that failed or went away, a specialist that failed, a call cut at the output limit and never made again (also `strict = true` in config.toml)'
            cand --no-session 'Keep no session: nothing of the conversation is written to the data directory'
            cand --any-workspace 'Let --resume continue a session that belongs to another workspace, in this one'
            cand --list-tools 'Print the tools the model would see under these flags, then exit'
            cand --list-specialists 'Print the specialists the `Task` tool can launch, then exit'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;tasks'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand list 'List tasks, newest first'
            cand show 'Show one task''s record'
            cand output 'Print a task''s raw output (a specialist''s is its stream-json)'
            cand stop 'Stop a running task of a live run (from any shell): SIGTERM, grace period, SIGKILL'
            cand gc 'Delete the records and outputs of finished tasks older than a cutoff'
        }
        &'zero;tasks;list'= {
            cand --run 'Only the tasks of this run (a run id, like run_20260102030405_0a1b2c)'
            cand --status 'Only tasks with this status'
            cand --json 'One JSON array of records instead of a table'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;tasks;show'= {
            cand --json 'The record as JSON instead of `key: value` lines'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;tasks;output'= {
            cand --tail 'Only the last BYTES bytes (read by seeking from the end)'
            cand --follow 'Keep printing new output until the task ends (or Ctrl-C)'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;tasks;stop'= {
            cand --json 'The final record as JSON'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;tasks;gc'= {
            cand --older-than 'Only tasks that ended longer ago than this (`30m`, `12h`, `7d`, `2w`)'
            cand --dry-run 'Say what would be deleted, delete nothing'
            cand --json 'The report as JSON'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;sessions'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand list 'List sessions, most recently used first'
            cand show 'Show one session: its record, then its conversation'
            cand rm 'Delete a session (refused while a run uses it)'
            cand gc 'Delete the sessions last used longer ago than a cutoff (never one in use)'
        }
        &'zero;sessions;list'= {
            cand --json 'One JSON array of session records instead of a table'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;sessions;show'= {
            cand --json '`{"session": record, "messages": [...]}` instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;sessions;rm'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;sessions;gc'= {
            cand --older-than 'Only sessions last used longer ago than this (`12h`, `7d`, `2w`)'
            cand --dry-run 'Say what would be deleted, delete nothing'
            cand --json 'The report as JSON'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;worktrees'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand list 'List worktrees, by name'
            cand show 'Show one worktree''s record'
            cand rm 'Delete a worktree: its directory, lock, branch and record (refused while a run uses it)'
            cand gc 'Delete the records (and kept directories) of worktrees that ended longer ago than a cutoff; their branches stay'
        }
        &'zero;worktrees;list'= {
            cand --json 'One JSON array of records instead of a table'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;worktrees;show'= {
            cand --json 'The record as JSON instead of `key: value` lines'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;worktrees;rm'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;worktrees;gc'= {
            cand --older-than 'Only worktrees that ended longer ago than this (`12h`, `7d`, `2w`)'
            cand --include-interrupted 'Interrupted worktrees too (their directories may hold uncommitted work)'
            cand --dry-run 'Say what would be deleted, delete nothing'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'zero;__generate'= {
            cand --completions 'Directory that receives the shell completions'
            cand --man 'Directory that receives the man pages'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}

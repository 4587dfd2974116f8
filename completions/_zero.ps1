
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'zero' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'zero'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'zero' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run one agent job headlessly and exit with a code a script can act on')
            [CompletionResult]::new('review', 'review', [CompletionResultType]::ParameterValue, 'Review a change read-only and report findings where CI shows them (text, JSON, SARIF, GitHub annotations, GitLab Code Quality, a Markdown comment)')
            [CompletionResult]::new('tasks', 'tasks', [CompletionResultType]::ParameterValue, 'Inspect, follow, stop and clean up background tasks and specialists of every run')
            [CompletionResult]::new('sessions', 'sessions', [CompletionResultType]::ParameterValue, 'List, show and clean up the sessions `zero exec --resume` continues')
            [CompletionResult]::new('replay', 'replay', [CompletionResultType]::ParameterValue, 'Read and check the cassettes `zero exec --record` writes and `--replay` serves')
            [CompletionResult]::new('worktrees', 'worktrees', [CompletionResultType]::ParameterValue, 'List, show and clean up the worktrees `zero exec --worktree` made')
            [CompletionResult]::new('__generate', '__generate', [CompletionResultType]::ParameterValue, 'Write shell completions and man pages (used to refresh the committed copies)')
            break
        }
        'zero;exec' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Prompt text (repeatable; joined with the positional words in argv order)')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'Prompt text (repeatable; joined with the positional words in argv order)')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Read (more of) the prompt from a file, appended after a blank line')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Read (more of) the prompt from a file, appended after a blank line')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and 8000×8000 px')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Workspace root (default: the current directory)')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Workspace root (default: the current directory)')
            [CompletionResult]::new('--worktree', '--worktree', [CompletionResultType]::ParameterName, 'Run in a new git worktree of the workspace''s repository, on the branch `zero/NAME` (NAME defaults to a fresh id); at the end the changes are committed there, the worktree directory is removed and the branch is kept. Write it `--worktree=NAME` before a prompt word')
            [CompletionResult]::new('--add-dir', '--add-dir', [CompletionResultType]::ParameterName, 'An extra directory the agent may write to (repeatable)')
            [CompletionResult]::new('--auto', '--auto', [CompletionResultType]::ParameterName, 'How much the agent may do without asking: low = read only, medium = edit files in the workspace and run commands, high = everything')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'The kernel sandbox for commands: auto = apply what the kernel supports and warn about the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto, or `sandbox` in config.toml]')
            [CompletionResult]::new('--env-keep', '--env-keep', [CompletionResultType]::ParameterName, 'Pass this variable to commands although its name looks like a secret (repeatable; `env_keep` in config.toml adds more)')
            [CompletionResult]::new('--enabled-tools', '--enabled-tools', [CompletionResultType]::ParameterName, 'Only these tools are offered to the model (comma or space separated)')
            [CompletionResult]::new('--disabled-tools', '--disabled-tools', [CompletionResultType]::ParameterName, 'These tools are never offered to the model (comma or space separated)')
            [CompletionResult]::new('--allow', '--allow', [CompletionResultType]::ParameterName, 'A permission rule: calls of the tool it names run only when an allow rule matches them (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`, `mcp__github__*`, or Claude Code''s `Bash(git log:*)`. Rules only narrow what --auto grants')
            [CompletionResult]::new('--deny', '--deny', [CompletionResultType]::ParameterName, 'A permission rule: calls it matches are denied, whatever allows them (repeatable): `bash(git push *)`, `write_file(.github/**)`')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML, or a Claude Code settings.json (its `ask` rules are denied). A workspace''s own files are never read without it')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their tools are offered as `mcp__SERVER__TOOL`')
            [CompletionResult]::new('--hooks', '--hooks', [CompletionResultType]::ParameterName, 'Run the hooks this file configures, besides config.toml''s `[hooks]` (repeatable): TOML or JSON in zero''s shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json (`{"hooks": {"PreToolUse": [...]}}`). A workspace''s own files are never read without it')
            [CompletionResult]::new('--skills-dir', '--skills-dir', [CompletionResultType]::ParameterName, 'Also look for skills in this directory, before the workspace''s and the user''s (repeatable): each skill a subdirectory with a SKILL.md')
            [CompletionResult]::new('--skill', '--skill', [CompletionResultType]::ParameterName, 'Offer only this skill (repeatable) [default: every skill found]')
            [CompletionResult]::new('--skill-in-use', '--skill-in-use', [CompletionResultType]::ParameterName, 'A skill in use in the run that launched this one, as JSON (`{"skill": NAME, "allowed_tools": [ENTRY, ...]}`, repeatable): its `allowed-tools` narrow this run from its start. What a specialist is handed; a caller gains nothing by it (it only narrows)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)')
            [CompletionResult]::new('--input-format', '--input-format', [CompletionResultType]::ParameterName, 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)')
            [CompletionResult]::new('--output-last-message', '--output-last-message', [CompletionResultType]::ParameterName, 'Also write the final answer to this file (atomically), in every output format')
            [CompletionResult]::new('--output-schema', '--output-schema', [CompletionResultType]::ParameterName, 'A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then one JSON value, printed compact on one line. No valid answer: exit 4')
            [CompletionResult]::new('--schema-retries', '--schema-retries', [CompletionResultType]::ParameterName, 'How many times an answer that misses --output-schema goes back to the model with the errors [default: 2]')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'A check that must pass for the run to succeed (repeatable; also `verify` in config.toml or the --rules file): a command run in the workspace when the model gives its final answer. One that fails goes back to the model with its exit code and the end of its output, up to --verify-retries times; never passing is exit 4')
            [CompletionResult]::new('--verify-timeout', '--verify-timeout', [CompletionResultType]::ParameterName, 'How long one check may run before it is stopped with everything it started [default: 10m, or `verify_timeout` in config.toml]')
            [CompletionResult]::new('--verify-retries', '--verify-retries', [CompletionResultType]::ParameterName, 'How many times a check that fails goes back to the model [default: 2, or `verify_retries` in config.toml]')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Model name, as the provider knows it')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model name, as the provider knows it')
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'Which wire protocol the endpoint speaks')
            [CompletionResult]::new('--base-url', '--base-url', [CompletionResultType]::ParameterName, 'Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1)')
            [CompletionResult]::new('--max-output-tokens', '--max-output-tokens', [CompletionResultType]::ParameterName, 'The most tokens the model may produce in one response [default: 8192, or `max_output_tokens` in config.toml]. A response cut there is reported as a warning')
            [CompletionResult]::new('--reasoning-effort', '--reasoning-effort', [CompletionResultType]::ParameterName, 'How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI''s `reasoning_effort`, or Anthropic''s extended thinking with a budget of 1024, 2048, 8192, 16384 or 32768 tokens. A server that refuses it is asked again without it, with a warning')
            [CompletionResult]::new('--fallback-model', '--fallback-model', [CompletionResultType]::ParameterName, 'A model to turn to when the current one stays overloaded, rate-limited, unreachable or unknown after its retries; repeat for more, tried in order (also `fallback_models` in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`, `openai:…`), reached through that wire''s own variables')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also `timeout` in config.toml). When it passes everything is stopped and the run exits 4')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'A token budget (input plus output) for the whole run, children included (also `max_tokens` in config.toml). The response that passes it ends the run: exit 4')
            [CompletionResult]::new('--max-cost-usd', '--max-cost-usd', [CompletionResultType]::ParameterName, 'A budget in US dollars for the whole run, children included (also `max_cost_usd` in config.toml); needs the model''s price in the `[prices]` table of config.toml')
            [CompletionResult]::new('--context-window', '--context-window', [CompletionResultType]::ParameterName, 'The model''s context window in tokens, when the server does not report it and zero''s table does not know the model (also `context_window` in config.toml) [default: 128000]')
            [CompletionResult]::new('--prompt-style', '--prompt-style', [CompletionResultType]::ParameterName, 'The system prompt and tool list: `compact` (a short prompt and the tools a small model uses well) or `full` (also `prompt_style` in config.toml) [default: compact for `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else full]')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Continue a session: its conversation, then this prompt. `last` is this workspace''s most recent session')
            [CompletionResult]::new('--fork', '--fork', [CompletionResultType]::ParameterName, 'Start a new session from a copy of this one''s conversation (it is left as it was)')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`)')
            [CompletionResult]::new('--max-turns', '--max-turns', [CompletionResultType]::ParameterName, 'Give up after this many model turns (exit 4)')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Record the run''s model traffic to this cassette (JSON lines, docs/REPLAY.md): every request in canonical form and every response as received, specialists'' included, redacted. An existing file is replaced; a symbolic link is refused')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Serve the model''s side from this cassette: no network, no key. Tools, rules, hooks, MCP servers and checks run for real; a request that differs from the recorded one ends the run with exit 3 (`replay_drift`) and what changed')
            [CompletionResult]::new('--skip-permissions-unsafe', '--skip-permissions-unsafe', [CompletionResultType]::ParameterName, 'Allow every tool, writes anywhere and any command (same as `--auto high`)')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Let commands open network connections at --auto low and medium (`network = true` in config.toml does the same)')
            [CompletionResult]::new('--mcp-project', '--mcp-project', [CompletionResultType]::ParameterName, 'Also start the servers of the workspace''s own `.mcp.json` (never read without this: a checkout must not start the processes it names)')
            [CompletionResult]::new('--strict-mcp-config', '--strict-mcp-config', [CompletionResultType]::ParameterName, 'Start only the servers of the --mcp-config files, none from config.toml or the workspace')
            [CompletionResult]::new('--hooks-fail-open', '--hooks-fail-open', [CompletionResultType]::ParameterName, 'Let a call through when a hook fails (crashes, times out, prints what is not a reply) instead of denying it')
            [CompletionResult]::new('--no-skills', '--no-skills', [CompletionResultType]::ParameterName, 'Offer no skills: none is looked for')
            [CompletionResult]::new('--web-fetch', '--web-fetch', [CompletionResultType]::ParameterName, 'Offer the web_fetch tool, which fetches a web page as text (also `web_fetch = true` in config.toml, or any web_fetch/WebFetch allow rule)')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'End the run with exit 4 when its work was blocked, after the answer is printed: a call refused by --auto, a rule or a hook, an MCP server that failed or went away, a specialist that failed, a call cut at the output limit and never made again (also `strict = true` in config.toml)')
            [CompletionResult]::new('--no-session', '--no-session', [CompletionResultType]::ParameterName, 'Keep no session: nothing of the conversation is written to the data directory')
            [CompletionResult]::new('--any-workspace', '--any-workspace', [CompletionResultType]::ParameterName, 'Let --resume continue a session that belongs to another workspace, in this one')
            [CompletionResult]::new('--replay-lenient', '--replay-lenient', [CompletionResultType]::ParameterName, 'With --replay: hold each request to the recorded conversation''s shape only (the same tool calls in order), not to its every byte, for tests whose tool output changes')
            [CompletionResult]::new('--replay-timing', '--replay-timing', [CompletionResultType]::ParameterName, 'With --replay: stream at the recorded pace instead of as fast as possible')
            [CompletionResult]::new('--list-tools', '--list-tools', [CompletionResultType]::ParameterName, 'Print the tools the model would see under these flags, then exit')
            [CompletionResult]::new('--list-specialists', '--list-specialists', [CompletionResultType]::ParameterName, 'Print the specialists the `Task` tool can launch, then exit')
            [CompletionResult]::new('--list-skills', '--list-skills', [CompletionResultType]::ParameterName, 'Print the skills the model would be offered, then exit')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;review' {
            [CompletionResult]::new('--base', '--base', [CompletionResultType]::ParameterName, 'Review the change from the merge base of REF and HEAD to the working tree [default: the branch''s upstream, else origin/HEAD]')
            [CompletionResult]::new('--commit', '--commit', [CompletionResultType]::ParameterName, 'Review one commit (against its first parent)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'How to write the findings: text, json, sarif, github, gitlab or markdown; `FORMAT=FILE` writes that format to FILE (atomically). Repeatable; what names no file goes to stdout')
            [CompletionResult]::new('--fail-on', '--fail-on', [CompletionResultType]::ParameterName, 'The least severe finding that fails the review with exit code 5 (`never`: findings never fail it)')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Prompt text (repeatable; joined with the positional words in argv order)')
            [CompletionResult]::new('--prompt', '--prompt', [CompletionResultType]::ParameterName, 'Prompt text (repeatable; joined with the positional words in argv order)')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Read (more of) the prompt from a file, appended after a blank line')
            [CompletionResult]::new('--file', '--file', [CompletionResultType]::ParameterName, 'Read (more of) the prompt from a file, appended after a blank line')
            [CompletionResult]::new('--image', '--image', [CompletionResultType]::ParameterName, 'Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and 8000×8000 px')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Workspace root (default: the current directory)')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Workspace root (default: the current directory)')
            [CompletionResult]::new('--worktree', '--worktree', [CompletionResultType]::ParameterName, 'Run in a new git worktree of the workspace''s repository, on the branch `zero/NAME` (NAME defaults to a fresh id); at the end the changes are committed there, the worktree directory is removed and the branch is kept. Write it `--worktree=NAME` before a prompt word')
            [CompletionResult]::new('--add-dir', '--add-dir', [CompletionResultType]::ParameterName, 'An extra directory the agent may write to (repeatable)')
            [CompletionResult]::new('--auto', '--auto', [CompletionResultType]::ParameterName, 'How much the agent may do without asking: low = read only, medium = edit files in the workspace and run commands, high = everything')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'The kernel sandbox for commands: auto = apply what the kernel supports and warn about the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto, or `sandbox` in config.toml]')
            [CompletionResult]::new('--env-keep', '--env-keep', [CompletionResultType]::ParameterName, 'Pass this variable to commands although its name looks like a secret (repeatable; `env_keep` in config.toml adds more)')
            [CompletionResult]::new('--enabled-tools', '--enabled-tools', [CompletionResultType]::ParameterName, 'Only these tools are offered to the model (comma or space separated)')
            [CompletionResult]::new('--disabled-tools', '--disabled-tools', [CompletionResultType]::ParameterName, 'These tools are never offered to the model (comma or space separated)')
            [CompletionResult]::new('--allow', '--allow', [CompletionResultType]::ParameterName, 'A permission rule: calls of the tool it names run only when an allow rule matches them (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`, `mcp__github__*`, or Claude Code''s `Bash(git log:*)`. Rules only narrow what --auto grants')
            [CompletionResult]::new('--deny', '--deny', [CompletionResultType]::ParameterName, 'A permission rule: calls it matches are denied, whatever allows them (repeatable): `bash(git push *)`, `write_file(.github/**)`')
            [CompletionResult]::new('--rules', '--rules', [CompletionResultType]::ParameterName, 'Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML, or a Claude Code settings.json (its `ask` rules are denied). A workspace''s own files are never read without it')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their tools are offered as `mcp__SERVER__TOOL`')
            [CompletionResult]::new('--hooks', '--hooks', [CompletionResultType]::ParameterName, 'Run the hooks this file configures, besides config.toml''s `[hooks]` (repeatable): TOML or JSON in zero''s shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json (`{"hooks": {"PreToolUse": [...]}}`). A workspace''s own files are never read without it')
            [CompletionResult]::new('--skills-dir', '--skills-dir', [CompletionResultType]::ParameterName, 'Also look for skills in this directory, before the workspace''s and the user''s (repeatable): each skill a subdirectory with a SKILL.md')
            [CompletionResult]::new('--skill', '--skill', [CompletionResultType]::ParameterName, 'Offer only this skill (repeatable) [default: every skill found]')
            [CompletionResult]::new('--skill-in-use', '--skill-in-use', [CompletionResultType]::ParameterName, 'A skill in use in the run that launched this one, as JSON (`{"skill": NAME, "allowed_tools": [ENTRY, ...]}`, repeatable): its `allowed-tools` narrow this run from its start. What a specialist is handed; a caller gains nothing by it (it only narrows)')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line')
            [CompletionResult]::new('--output-format', '--output-format', [CompletionResultType]::ParameterName, 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)')
            [CompletionResult]::new('--input-format', '--input-format', [CompletionResultType]::ParameterName, 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)')
            [CompletionResult]::new('--output-last-message', '--output-last-message', [CompletionResultType]::ParameterName, 'Also write the final answer to this file (atomically), in every output format')
            [CompletionResult]::new('--output-schema', '--output-schema', [CompletionResultType]::ParameterName, 'A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then one JSON value, printed compact on one line. No valid answer: exit 4')
            [CompletionResult]::new('--schema-retries', '--schema-retries', [CompletionResultType]::ParameterName, 'How many times an answer that misses --output-schema goes back to the model with the errors [default: 2]')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'A check that must pass for the run to succeed (repeatable; also `verify` in config.toml or the --rules file): a command run in the workspace when the model gives its final answer. One that fails goes back to the model with its exit code and the end of its output, up to --verify-retries times; never passing is exit 4')
            [CompletionResult]::new('--verify-timeout', '--verify-timeout', [CompletionResultType]::ParameterName, 'How long one check may run before it is stopped with everything it started [default: 10m, or `verify_timeout` in config.toml]')
            [CompletionResult]::new('--verify-retries', '--verify-retries', [CompletionResultType]::ParameterName, 'How many times a check that fails goes back to the model [default: 2, or `verify_retries` in config.toml]')
            [CompletionResult]::new('-m', '-m', [CompletionResultType]::ParameterName, 'Model name, as the provider knows it')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Model name, as the provider knows it')
            [CompletionResult]::new('--provider', '--provider', [CompletionResultType]::ParameterName, 'Which wire protocol the endpoint speaks')
            [CompletionResult]::new('--base-url', '--base-url', [CompletionResultType]::ParameterName, 'Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1)')
            [CompletionResult]::new('--max-output-tokens', '--max-output-tokens', [CompletionResultType]::ParameterName, 'The most tokens the model may produce in one response [default: 8192, or `max_output_tokens` in config.toml]. A response cut there is reported as a warning')
            [CompletionResult]::new('--reasoning-effort', '--reasoning-effort', [CompletionResultType]::ParameterName, 'How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI''s `reasoning_effort`, or Anthropic''s extended thinking with a budget of 1024, 2048, 8192, 16384 or 32768 tokens. A server that refuses it is asked again without it, with a warning')
            [CompletionResult]::new('--fallback-model', '--fallback-model', [CompletionResultType]::ParameterName, 'A model to turn to when the current one stays overloaded, rate-limited, unreachable or unknown after its retries; repeat for more, tried in order (also `fallback_models` in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`, `openai:…`), reached through that wire''s own variables')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also `timeout` in config.toml). When it passes everything is stopped and the run exits 4')
            [CompletionResult]::new('--max-tokens', '--max-tokens', [CompletionResultType]::ParameterName, 'A token budget (input plus output) for the whole run, children included (also `max_tokens` in config.toml). The response that passes it ends the run: exit 4')
            [CompletionResult]::new('--max-cost-usd', '--max-cost-usd', [CompletionResultType]::ParameterName, 'A budget in US dollars for the whole run, children included (also `max_cost_usd` in config.toml); needs the model''s price in the `[prices]` table of config.toml')
            [CompletionResult]::new('--context-window', '--context-window', [CompletionResultType]::ParameterName, 'The model''s context window in tokens, when the server does not report it and zero''s table does not know the model (also `context_window` in config.toml) [default: 128000]')
            [CompletionResult]::new('--prompt-style', '--prompt-style', [CompletionResultType]::ParameterName, 'The system prompt and tool list: `compact` (a short prompt and the tools a small model uses well) or `full` (also `prompt_style` in config.toml) [default: compact for `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else full]')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Continue a session: its conversation, then this prompt. `last` is this workspace''s most recent session')
            [CompletionResult]::new('--fork', '--fork', [CompletionResultType]::ParameterName, 'Start a new session from a copy of this one''s conversation (it is left as it was)')
            [CompletionResult]::new('--session-id', '--session-id', [CompletionResultType]::ParameterName, 'The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`)')
            [CompletionResult]::new('--max-turns', '--max-turns', [CompletionResultType]::ParameterName, 'Give up after this many model turns (exit 4)')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Record the run''s model traffic to this cassette (JSON lines, docs/REPLAY.md): every request in canonical form and every response as received, specialists'' included, redacted. An existing file is replaced; a symbolic link is refused')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Serve the model''s side from this cassette: no network, no key. Tools, rules, hooks, MCP servers and checks run for real; a request that differs from the recorded one ends the run with exit 3 (`replay_drift`) and what changed')
            [CompletionResult]::new('--uncommitted', '--uncommitted', [CompletionResultType]::ParameterName, 'Review what is not committed yet (staged and unstaged, against HEAD)')
            [CompletionResult]::new('--skip-permissions-unsafe', '--skip-permissions-unsafe', [CompletionResultType]::ParameterName, 'Allow every tool, writes anywhere and any command (same as `--auto high`)')
            [CompletionResult]::new('--network', '--network', [CompletionResultType]::ParameterName, 'Let commands open network connections at --auto low and medium (`network = true` in config.toml does the same)')
            [CompletionResult]::new('--mcp-project', '--mcp-project', [CompletionResultType]::ParameterName, 'Also start the servers of the workspace''s own `.mcp.json` (never read without this: a checkout must not start the processes it names)')
            [CompletionResult]::new('--strict-mcp-config', '--strict-mcp-config', [CompletionResultType]::ParameterName, 'Start only the servers of the --mcp-config files, none from config.toml or the workspace')
            [CompletionResult]::new('--hooks-fail-open', '--hooks-fail-open', [CompletionResultType]::ParameterName, 'Let a call through when a hook fails (crashes, times out, prints what is not a reply) instead of denying it')
            [CompletionResult]::new('--no-skills', '--no-skills', [CompletionResultType]::ParameterName, 'Offer no skills: none is looked for')
            [CompletionResult]::new('--web-fetch', '--web-fetch', [CompletionResultType]::ParameterName, 'Offer the web_fetch tool, which fetches a web page as text (also `web_fetch = true` in config.toml, or any web_fetch/WebFetch allow rule)')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'End the run with exit 4 when its work was blocked, after the answer is printed: a call refused by --auto, a rule or a hook, an MCP server that failed or went away, a specialist that failed, a call cut at the output limit and never made again (also `strict = true` in config.toml)')
            [CompletionResult]::new('--no-session', '--no-session', [CompletionResultType]::ParameterName, 'Keep no session: nothing of the conversation is written to the data directory')
            [CompletionResult]::new('--any-workspace', '--any-workspace', [CompletionResultType]::ParameterName, 'Let --resume continue a session that belongs to another workspace, in this one')
            [CompletionResult]::new('--replay-lenient', '--replay-lenient', [CompletionResultType]::ParameterName, 'With --replay: hold each request to the recorded conversation''s shape only (the same tool calls in order), not to its every byte, for tests whose tool output changes')
            [CompletionResult]::new('--replay-timing', '--replay-timing', [CompletionResultType]::ParameterName, 'With --replay: stream at the recorded pace instead of as fast as possible')
            [CompletionResult]::new('--list-tools', '--list-tools', [CompletionResultType]::ParameterName, 'Print the tools the model would see under these flags, then exit')
            [CompletionResult]::new('--list-specialists', '--list-specialists', [CompletionResultType]::ParameterName, 'Print the specialists the `Task` tool can launch, then exit')
            [CompletionResult]::new('--list-skills', '--list-skills', [CompletionResultType]::ParameterName, 'Print the skills the model would be offered, then exit')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;tasks' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List tasks, newest first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one task''s record')
            [CompletionResult]::new('output', 'output', [CompletionResultType]::ParameterValue, 'Print a task''s raw output (a specialist''s is its stream-json)')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop a running task of a live run (from any shell): SIGTERM, grace period, SIGKILL')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Delete the records and outputs of finished tasks older than a cutoff')
            break
        }
        'zero;tasks;list' {
            [CompletionResult]::new('--run', '--run', [CompletionResultType]::ParameterName, 'Only the tasks of this run (a run id, like run_20260102030405_0a1b2c)')
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Only tasks with this status')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON array of records instead of a table')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;tasks;show' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The record as JSON instead of `key: value` lines')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;tasks;output' {
            [CompletionResult]::new('--tail', '--tail', [CompletionResultType]::ParameterName, 'Only the last BYTES bytes (read by seeking from the end)')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Keep printing new output until the task ends (or Ctrl-C)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;tasks;stop' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The final record as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;tasks;gc' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only tasks that ended longer ago than this (`30m`, `12h`, `7d`, `2w`)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would be deleted, delete nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The report as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;sessions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List sessions, most recently used first')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one session: its record, then its conversation')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Delete a session (refused while a run uses it)')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Delete the sessions last used longer ago than a cutoff (never one in use)')
            break
        }
        'zero;sessions;list' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON array of session records instead of a table')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;sessions;show' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, '`{"session": record, "messages": [...]}` instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;sessions;rm' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;sessions;gc' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only sessions last used longer ago than this (`12h`, `7d`, `2w`)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would be deleted, delete nothing')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The report as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;replay' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the recorded run as `-o text` printed it (progress on stderr, the answer on stdout), each specialist after it')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Check a cassette: every line''s schema, its version, every request''s hash; exit 2 naming the first line that is wrong')
            break
        }
        'zero;replay;show' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;replay;check' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;worktrees' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List worktrees, by name')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one worktree''s record')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Delete a worktree: its directory, lock, branch and record (refused while a run uses it)')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Delete the records (and kept directories) of worktrees that ended longer ago than a cutoff; their branches stay')
            break
        }
        'zero;worktrees;list' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'One JSON array of records instead of a table')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;worktrees;show' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The record as JSON instead of `key: value` lines')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;worktrees;rm' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;worktrees;gc' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Only worktrees that ended longer ago than this (`12h`, `7d`, `2w`)')
            [CompletionResult]::new('--include-interrupted', '--include-interrupted', [CompletionResultType]::ParameterName, 'Interrupted worktrees too (their directories may hold uncommitted work)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would be deleted, delete nothing')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'zero;__generate' {
            [CompletionResult]::new('--completions', '--completions', [CompletionResultType]::ParameterName, 'Directory that receives the shell completions')
            [CompletionResult]::new('--man', '--man', [CompletionResultType]::ParameterName, 'Directory that receives the man pages')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}

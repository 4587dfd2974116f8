# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_zero_global_optspecs
    string join \n h/help V/version
end

function __fish_zero_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_zero_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_zero_using_subcommand
    set -l cmd (__fish_zero_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c zero -n "__fish_zero_needs_command" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_needs_command" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_needs_command" -f -a "exec" -d 'Run one agent job headlessly and exit with a code a script can act on'
complete -c zero -n "__fish_zero_needs_command" -f -a "review" -d 'Review a change read-only and report findings where CI shows them (text, JSON, SARIF, GitHub annotations, GitLab Code Quality, a Markdown comment)'
complete -c zero -n "__fish_zero_needs_command" -f -a "tasks" -d 'Inspect, follow, stop and clean up background tasks and specialists of every run'
complete -c zero -n "__fish_zero_needs_command" -f -a "sessions" -d 'List, show and clean up the sessions `zero exec --resume` continues'
complete -c zero -n "__fish_zero_needs_command" -f -a "replay" -d 'Read and check the cassettes `zero exec --record` writes and `--replay` serves'
complete -c zero -n "__fish_zero_needs_command" -f -a "worktrees" -d 'List, show and clean up the worktrees `zero exec --worktree` made'
complete -c zero -n "__fish_zero_needs_command" -f -a "__generate" -d 'Write shell completions and man pages (used to refresh the committed copies)'
complete -c zero -n "__fish_zero_using_subcommand exec" -s p -l prompt -d 'Prompt text (repeatable; joined with the positional words in argv order)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -s f -l file -d 'Read (more of) the prompt from a file, appended after a blank line' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l image -d 'Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and 8000×8000 px' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -s C -l cwd -d 'Workspace root (default: the current directory)' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l worktree -d 'Run in a new git worktree of the workspace\'s repository, on the branch `zero/NAME` (NAME defaults to a fresh id); at the end the changes are committed there, the worktree directory is removed and the branch is kept. Write it `--worktree=NAME` before a prompt word' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l add-dir -d 'An extra directory the agent may write to (repeatable)' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l auto -d 'How much the agent may do without asking: low = read only, medium = edit files in the workspace and run commands, high = everything' -r -f -a "low\t'Read-only tools and planning'
medium\t'Adds writes inside the workspace and `--add-dir` roots, and shell commands. (At low, `bash` is offered too when the sandbox makes commands read-only.)'
high\t'Everything, including writes anywhere'"
complete -c zero -n "__fish_zero_using_subcommand exec" -l sandbox -d 'The kernel sandbox for commands: auto = apply what the kernel supports and warn about the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto, or `sandbox` in config.toml]' -r -f -a "auto\t'Apply what the kernel supports, and warn about what it does not'
required\t'Refuse to run when a rule the run needs cannot be enforced'
off\t'Apply nothing (the file tools stay confined)'"
complete -c zero -n "__fish_zero_using_subcommand exec" -l env-keep -d 'Pass this variable to commands although its name looks like a secret (repeatable; `env_keep` in config.toml adds more)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l enabled-tools -d 'Only these tools are offered to the model (comma or space separated)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l disabled-tools -d 'These tools are never offered to the model (comma or space separated)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l allow -d 'A permission rule: calls of the tool it names run only when an allow rule matches them (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`, `mcp__github__*`, or Claude Code\'s `Bash(git log:*)`. Rules only narrow what --auto grants' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l deny -d 'A permission rule: calls it matches are denied, whatever allows them (repeatable): `bash(git push *)`, `write_file(.github/**)`' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l rules -d 'Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML, or a Claude Code settings.json (its `ask` rules are denied). A workspace\'s own files are never read without it' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l mcp-config -d 'Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their tools are offered as `mcp__SERVER__TOOL`' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l hooks -d 'Run the hooks this file configures, besides config.toml\'s `[hooks]` (repeatable): TOML or JSON in zero\'s shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json (`{"hooks": {"PreToolUse": [...]}}`). A workspace\'s own files are never read without it' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l skills-dir -d 'Also look for skills in this directory, before the workspace\'s and the user\'s (repeatable): each skill a subdirectory with a SKILL.md' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l skill -d 'Offer only this skill (repeatable) [default: every skill found]' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l skill-in-use -d 'A skill in use in the run that launched this one, as JSON (`{"skill": NAME, "allowed_tools": [ENTRY, ...]}`, repeatable): its `allowed-tools` narrow this run from its start. What a specialist is handed; a caller gains nothing by it (it only narrows)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -s o -l output-format -d 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line' -r -f -a "text\t'Only the final answer on stdout; progress on stderr'
json\t'One JSON summary object at the end'
stream-json\t'One JSON event per line (schema in docs/STREAM_JSON.md)'"
complete -c zero -n "__fish_zero_using_subcommand exec" -s i -l input-format -d 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)' -r -f -a "text\t'The prompt is plain text'
stream-json\t'The prompt is JSON lines of `prompt`/`message` events'"
complete -c zero -n "__fish_zero_using_subcommand exec" -l output-last-message -d 'Also write the final answer to this file (atomically), in every output format' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l output-schema -d 'A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then one JSON value, printed compact on one line. No valid answer: exit 4' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l schema-retries -d 'How many times an answer that misses --output-schema goes back to the model with the errors [default: 2]' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l verify -d 'A check that must pass for the run to succeed (repeatable; also `verify` in config.toml or the --rules file): a command run in the workspace when the model gives its final answer. One that fails goes back to the model with its exit code and the end of its output, up to --verify-retries times; never passing is exit 4' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l verify-timeout -d 'How long one check may run before it is stopped with everything it started [default: 10m, or `verify_timeout` in config.toml]' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l verify-retries -d 'How many times a check that fails goes back to the model [default: 2, or `verify_retries` in config.toml]' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -s m -l model -d 'Model name, as the provider knows it' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l provider -d 'Which wire protocol the endpoint speaks' -r -f -a "openai\t'OpenAI Chat Completions (also Ollama, llama.cpp, vLLM, OpenRouter, ...)'
anthropic\t'Anthropic Messages'
local\t'A model on this machine: zero starts llama.cpp\'s server itself (built by `scripts/local-model build`) and speaks the OpenAI wire to it over a Unix socket'"
complete -c zero -n "__fish_zero_using_subcommand exec" -l base-url -d 'Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l max-output-tokens -d 'The most tokens the model may produce in one response [default: 8192, or `max_output_tokens` in config.toml]. A response cut there is reported as a warning' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l reasoning-effort -d 'How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI\'s `reasoning_effort`, or Anthropic\'s extended thinking with a budget of 1024, 2048, 8192, 16384 or 32768 tokens. A server that refuses it is asked again without it, with a warning' -r -f -a "minimal\t'As little reasoning as the model allows (Anthropic: the minimum budget, 1024 tokens)'
low\t'Light reasoning (Anthropic: 2048 tokens)'
medium\t'The usual default of reasoning models (Anthropic: 8192 tokens)'
high\t'Thorough reasoning (Anthropic: 16384 tokens)'
xhigh\t'The most the model offers (Anthropic: 32768 tokens)'"
complete -c zero -n "__fish_zero_using_subcommand exec" -l fallback-model -d 'A model to turn to when the current one stays overloaded, rate-limited, unreachable or unknown after its retries; repeat for more, tried in order (also `fallback_models` in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`, `openai:…`), reached through that wire\'s own variables' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l timeout -d 'A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also `timeout` in config.toml). When it passes everything is stopped and the run exits 4' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l max-tokens -d 'A token budget (input plus output) for the whole run, children included (also `max_tokens` in config.toml). The response that passes it ends the run: exit 4' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l max-cost-usd -d 'A budget in US dollars for the whole run, children included (also `max_cost_usd` in config.toml); needs the model\'s price in the `[prices]` table of config.toml' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l context-window -d 'The model\'s context window in tokens, when the server does not report it and zero\'s table does not know the model (also `context_window` in config.toml) [default: 128000]' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l prompt-style -d 'The system prompt and tool list: `compact` (a short prompt and the tools a small model uses well) or `full` (also `prompt_style` in config.toml) [default: compact for `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else full]' -r -f -a "compact\t'A short system prompt and only the tools a small model uses well (the tool catalog, `tools::ToolId`, says which it leaves out)'
full\t'The system prompt and every tool'"
complete -c zero -n "__fish_zero_using_subcommand exec" -l resume -d 'Continue a session: its conversation, then this prompt. `last` is this workspace\'s most recent session' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l fork -d 'Start a new session from a copy of this one\'s conversation (it is left as it was)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l session-id -d 'The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l max-turns -d 'Give up after this many model turns (exit 4)' -r
complete -c zero -n "__fish_zero_using_subcommand exec" -l record -d 'Record the run\'s model traffic to this cassette (JSON lines, docs/REPLAY.md): every request in canonical form and every response as received, specialists\' included, redacted. An existing file is replaced; a symbolic link is refused' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l replay -d 'Serve the model\'s side from this cassette: no network, no key. Tools, rules, hooks, MCP servers and checks run for real; a request that differs from the recorded one ends the run with exit 3 (`replay_drift`) and what changed' -r -F
complete -c zero -n "__fish_zero_using_subcommand exec" -l skip-permissions-unsafe -d 'Allow every tool, writes anywhere and any command (same as `--auto high`)'
complete -c zero -n "__fish_zero_using_subcommand exec" -l network -d 'Let commands open network connections at --auto low and medium (`network = true` in config.toml does the same)'
complete -c zero -n "__fish_zero_using_subcommand exec" -l mcp-project -d 'Also start the servers of the workspace\'s own `.mcp.json` (never read without this: a checkout must not start the processes it names)'
complete -c zero -n "__fish_zero_using_subcommand exec" -l strict-mcp-config -d 'Start only the servers of the --mcp-config files, none from config.toml or the workspace'
complete -c zero -n "__fish_zero_using_subcommand exec" -l hooks-fail-open -d 'Let a call through when a hook fails (crashes, times out, prints what is not a reply) instead of denying it'
complete -c zero -n "__fish_zero_using_subcommand exec" -l no-skills -d 'Offer no skills: none is looked for'
complete -c zero -n "__fish_zero_using_subcommand exec" -l web-fetch -d 'Offer the web_fetch tool, which fetches a web page as text (also `web_fetch = true` in config.toml, or any web_fetch/WebFetch allow rule)'
complete -c zero -n "__fish_zero_using_subcommand exec" -l strict -d 'End the run with exit 4 when its work was blocked, after the answer is printed: a call refused by --auto, a rule or a hook, an MCP server that failed or went away, a specialist that failed, a call cut at the output limit and never made again (also `strict = true` in config.toml)'
complete -c zero -n "__fish_zero_using_subcommand exec" -l no-session -d 'Keep no session: nothing of the conversation is written to the data directory'
complete -c zero -n "__fish_zero_using_subcommand exec" -l any-workspace -d 'Let --resume continue a session that belongs to another workspace, in this one'
complete -c zero -n "__fish_zero_using_subcommand exec" -l replay-lenient -d 'With --replay: hold each request to the recorded conversation\'s shape only (the same tool calls in order), not to its every byte, for tests whose tool output changes'
complete -c zero -n "__fish_zero_using_subcommand exec" -l replay-timing -d 'With --replay: stream at the recorded pace instead of as fast as possible'
complete -c zero -n "__fish_zero_using_subcommand exec" -l list-tools -d 'Print the tools the model would see under these flags, then exit'
complete -c zero -n "__fish_zero_using_subcommand exec" -l list-specialists -d 'Print the specialists the `Task` tool can launch, then exit'
complete -c zero -n "__fish_zero_using_subcommand exec" -l list-skills -d 'Print the skills the model would be offered, then exit'
complete -c zero -n "__fish_zero_using_subcommand exec" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c zero -n "__fish_zero_using_subcommand exec" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand review" -l base -d 'Review the change from the merge base of REF and HEAD to the working tree [default: the branch\'s upstream, else origin/HEAD]' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l commit -d 'Review one commit (against its first parent)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l format -d 'How to write the findings: text, json, sarif, github, gitlab or markdown; `FORMAT=FILE` writes that format to FILE (atomically). Repeatable; what names no file goes to stdout' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l fail-on -d 'The least severe finding that fails the review with exit code 5 (`never`: findings never fail it)' -r -f -a "error\t'Fail on an error'
warning\t'Fail on a warning or an error'
note\t'Fail on any finding'
never\t'Never fail because of findings'"
complete -c zero -n "__fish_zero_using_subcommand review" -s p -l prompt -d 'Prompt text (repeatable; joined with the positional words in argv order)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -s f -l file -d 'Read (more of) the prompt from a file, appended after a blank line' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l image -d 'Attach an image to the prompt (repeatable): PNG, JPEG, GIF or WebP, at most 5 MB and 8000×8000 px' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -s C -l cwd -d 'Workspace root (default: the current directory)' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l worktree -d 'Run in a new git worktree of the workspace\'s repository, on the branch `zero/NAME` (NAME defaults to a fresh id); at the end the changes are committed there, the worktree directory is removed and the branch is kept. Write it `--worktree=NAME` before a prompt word' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l add-dir -d 'An extra directory the agent may write to (repeatable)' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l auto -d 'How much the agent may do without asking: low = read only, medium = edit files in the workspace and run commands, high = everything' -r -f -a "low\t'Read-only tools and planning'
medium\t'Adds writes inside the workspace and `--add-dir` roots, and shell commands. (At low, `bash` is offered too when the sandbox makes commands read-only.)'
high\t'Everything, including writes anywhere'"
complete -c zero -n "__fish_zero_using_subcommand review" -l sandbox -d 'The kernel sandbox for commands: auto = apply what the kernel supports and warn about the rest, required = exit 3 when a rule cannot be enforced, off = none [default: auto, or `sandbox` in config.toml]' -r -f -a "auto\t'Apply what the kernel supports, and warn about what it does not'
required\t'Refuse to run when a rule the run needs cannot be enforced'
off\t'Apply nothing (the file tools stay confined)'"
complete -c zero -n "__fish_zero_using_subcommand review" -l env-keep -d 'Pass this variable to commands although its name looks like a secret (repeatable; `env_keep` in config.toml adds more)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l enabled-tools -d 'Only these tools are offered to the model (comma or space separated)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l disabled-tools -d 'These tools are never offered to the model (comma or space separated)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l allow -d 'A permission rule: calls of the tool it names run only when an allow rule matches them (repeatable): `bash(cargo test *)`, `read_file(src/**)`, `Task(explorer)`, `mcp__github__*`, or Claude Code\'s `Bash(git log:*)`. Rules only narrow what --auto grants' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l deny -d 'A permission rule: calls it matches are denied, whatever allows them (repeatable): `bash(git push *)`, `write_file(.github/**)`' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l rules -d 'Read permission rules from this file: `[permissions]` with `allow` and `deny` in TOML, or a Claude Code settings.json (its `ask` rules are denied). A workspace\'s own files are never read without it' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l mcp-config -d 'Start the MCP servers this file names (the `.mcp.json` format; repeatable). Their tools are offered as `mcp__SERVER__TOOL`' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l hooks -d 'Run the hooks this file configures, besides config.toml\'s `[hooks]` (repeatable): TOML or JSON in zero\'s shape (`[[hooks.pre_tool_use]]`), or a Claude Code settings.json (`{"hooks": {"PreToolUse": [...]}}`). A workspace\'s own files are never read without it' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l skills-dir -d 'Also look for skills in this directory, before the workspace\'s and the user\'s (repeatable): each skill a subdirectory with a SKILL.md' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l skill -d 'Offer only this skill (repeatable) [default: every skill found]' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l skill-in-use -d 'A skill in use in the run that launched this one, as JSON (`{"skill": NAME, "allowed_tools": [ENTRY, ...]}`, repeatable): its `allowed-tools` narrow this run from its start. What a specialist is handed; a caller gains nothing by it (it only narrows)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -s o -l output-format -d 'What goes to stdout: the final answer, one JSON summary, or a JSON event per line' -r -f -a "text\t'Only the final answer on stdout; progress on stderr'
json\t'One JSON summary object at the end'
stream-json\t'One JSON event per line (schema in docs/STREAM_JSON.md)'"
complete -c zero -n "__fish_zero_using_subcommand review" -s i -l input-format -d 'How the prompt arrives: plain text, or JSON lines (from `--file` or stdin)' -r -f -a "text\t'The prompt is plain text'
stream-json\t'The prompt is JSON lines of `prompt`/`message` events'"
complete -c zero -n "__fish_zero_using_subcommand review" -l output-last-message -d 'Also write the final answer to this file (atomically), in every output format' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l output-schema -d 'A JSON Schema (draft 2020-12 or 7) the final answer must satisfy: the answer is then one JSON value, printed compact on one line. No valid answer: exit 4' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l schema-retries -d 'How many times an answer that misses --output-schema goes back to the model with the errors [default: 2]' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l verify -d 'A check that must pass for the run to succeed (repeatable; also `verify` in config.toml or the --rules file): a command run in the workspace when the model gives its final answer. One that fails goes back to the model with its exit code and the end of its output, up to --verify-retries times; never passing is exit 4' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l verify-timeout -d 'How long one check may run before it is stopped with everything it started [default: 10m, or `verify_timeout` in config.toml]' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l verify-retries -d 'How many times a check that fails goes back to the model [default: 2, or `verify_retries` in config.toml]' -r
complete -c zero -n "__fish_zero_using_subcommand review" -s m -l model -d 'Model name, as the provider knows it' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l provider -d 'Which wire protocol the endpoint speaks' -r -f -a "openai\t'OpenAI Chat Completions (also Ollama, llama.cpp, vLLM, OpenRouter, ...)'
anthropic\t'Anthropic Messages'
local\t'A model on this machine: zero starts llama.cpp\'s server itself (built by `scripts/local-model build`) and speaks the OpenAI wire to it over a Unix socket'"
complete -c zero -n "__fish_zero_using_subcommand review" -l base-url -d 'Base URL of the model endpoint (e.g. http://127.0.0.1:8080/v1)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l max-output-tokens -d 'The most tokens the model may produce in one response [default: 8192, or `max_output_tokens` in config.toml]. A response cut there is reported as a warning' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l reasoning-effort -d 'How hard a reasoning model thinks (also `reasoning_effort` in config.toml): OpenAI\'s `reasoning_effort`, or Anthropic\'s extended thinking with a budget of 1024, 2048, 8192, 16384 or 32768 tokens. A server that refuses it is asked again without it, with a warning' -r -f -a "minimal\t'As little reasoning as the model allows (Anthropic: the minimum budget, 1024 tokens)'
low\t'Light reasoning (Anthropic: 2048 tokens)'
medium\t'The usual default of reasoning models (Anthropic: 8192 tokens)'
high\t'Thorough reasoning (Anthropic: 16384 tokens)'
xhigh\t'The most the model offers (Anthropic: 32768 tokens)'"
complete -c zero -n "__fish_zero_using_subcommand review" -l fallback-model -d 'A model to turn to when the current one stays overloaded, rate-limited, unreachable or unknown after its retries; repeat for more, tried in order (also `fallback_models` in config.toml). `PROVIDER:MODEL` names a model of another wire (`anthropic:…`, `openai:…`), reached through that wire\'s own variables' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l timeout -d 'A wall-clock limit for the whole run, children included (`90s`, `20m`, `1h`; also `timeout` in config.toml). When it passes everything is stopped and the run exits 4' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l max-tokens -d 'A token budget (input plus output) for the whole run, children included (also `max_tokens` in config.toml). The response that passes it ends the run: exit 4' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l max-cost-usd -d 'A budget in US dollars for the whole run, children included (also `max_cost_usd` in config.toml); needs the model\'s price in the `[prices]` table of config.toml' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l context-window -d 'The model\'s context window in tokens, when the server does not report it and zero\'s table does not know the model (also `context_window` in config.toml) [default: 128000]' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l prompt-style -d 'The system prompt and tool list: `compact` (a short prompt and the tools a small model uses well) or `full` (also `prompt_style` in config.toml) [default: compact for `--provider local`, for a llama.cpp server and for a window under 32768 tokens; else full]' -r -f -a "compact\t'A short system prompt and only the tools a small model uses well (the tool catalog, `tools::ToolId`, says which it leaves out)'
full\t'The system prompt and every tool'"
complete -c zero -n "__fish_zero_using_subcommand review" -l resume -d 'Continue a session: its conversation, then this prompt. `last` is this workspace\'s most recent session' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l fork -d 'Start a new session from a copy of this one\'s conversation (it is left as it was)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l session-id -d 'The id of the new session, chosen in advance (1 to 64 letters, digits, `.`, `_`, `-`)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l max-turns -d 'Give up after this many model turns (exit 4)' -r
complete -c zero -n "__fish_zero_using_subcommand review" -l record -d 'Record the run\'s model traffic to this cassette (JSON lines, docs/REPLAY.md): every request in canonical form and every response as received, specialists\' included, redacted. An existing file is replaced; a symbolic link is refused' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l replay -d 'Serve the model\'s side from this cassette: no network, no key. Tools, rules, hooks, MCP servers and checks run for real; a request that differs from the recorded one ends the run with exit 3 (`replay_drift`) and what changed' -r -F
complete -c zero -n "__fish_zero_using_subcommand review" -l uncommitted -d 'Review what is not committed yet (staged and unstaged, against HEAD)'
complete -c zero -n "__fish_zero_using_subcommand review" -l skip-permissions-unsafe -d 'Allow every tool, writes anywhere and any command (same as `--auto high`)'
complete -c zero -n "__fish_zero_using_subcommand review" -l network -d 'Let commands open network connections at --auto low and medium (`network = true` in config.toml does the same)'
complete -c zero -n "__fish_zero_using_subcommand review" -l mcp-project -d 'Also start the servers of the workspace\'s own `.mcp.json` (never read without this: a checkout must not start the processes it names)'
complete -c zero -n "__fish_zero_using_subcommand review" -l strict-mcp-config -d 'Start only the servers of the --mcp-config files, none from config.toml or the workspace'
complete -c zero -n "__fish_zero_using_subcommand review" -l hooks-fail-open -d 'Let a call through when a hook fails (crashes, times out, prints what is not a reply) instead of denying it'
complete -c zero -n "__fish_zero_using_subcommand review" -l no-skills -d 'Offer no skills: none is looked for'
complete -c zero -n "__fish_zero_using_subcommand review" -l web-fetch -d 'Offer the web_fetch tool, which fetches a web page as text (also `web_fetch = true` in config.toml, or any web_fetch/WebFetch allow rule)'
complete -c zero -n "__fish_zero_using_subcommand review" -l strict -d 'End the run with exit 4 when its work was blocked, after the answer is printed: a call refused by --auto, a rule or a hook, an MCP server that failed or went away, a specialist that failed, a call cut at the output limit and never made again (also `strict = true` in config.toml)'
complete -c zero -n "__fish_zero_using_subcommand review" -l no-session -d 'Keep no session: nothing of the conversation is written to the data directory'
complete -c zero -n "__fish_zero_using_subcommand review" -l any-workspace -d 'Let --resume continue a session that belongs to another workspace, in this one'
complete -c zero -n "__fish_zero_using_subcommand review" -l replay-lenient -d 'With --replay: hold each request to the recorded conversation\'s shape only (the same tool calls in order), not to its every byte, for tests whose tool output changes'
complete -c zero -n "__fish_zero_using_subcommand review" -l replay-timing -d 'With --replay: stream at the recorded pace instead of as fast as possible'
complete -c zero -n "__fish_zero_using_subcommand review" -l list-tools -d 'Print the tools the model would see under these flags, then exit'
complete -c zero -n "__fish_zero_using_subcommand review" -l list-specialists -d 'Print the specialists the `Task` tool can launch, then exit'
complete -c zero -n "__fish_zero_using_subcommand review" -l list-skills -d 'Print the skills the model would be offered, then exit'
complete -c zero -n "__fish_zero_using_subcommand review" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c zero -n "__fish_zero_using_subcommand review" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -f -a "list" -d 'List tasks, newest first'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -f -a "show" -d 'Show one task\'s record'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -f -a "output" -d 'Print a task\'s raw output (a specialist\'s is its stream-json)'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -f -a "stop" -d 'Stop a running task of a live run (from any shell): SIGTERM, grace period, SIGKILL'
complete -c zero -n "__fish_zero_using_subcommand tasks; and not __fish_seen_subcommand_from list show output stop gc" -f -a "gc" -d 'Delete the records and outputs of finished tasks older than a cutoff'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from list" -l run -d 'Only the tasks of this run (a run id, like run_20260102030405_0a1b2c)' -r
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from list" -l status -d 'Only tasks with this status' -r -f -a "running\t'Started and not seen to end (and its run is alive)'
completed\t'Exited 0'
failed\t'Exited non-zero, or could not start'
killed\t'Stopped by TaskStop, `zero tasks stop`, or its run ending'
interrupted\t'Its run died while it was running'"
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from list" -l json -d 'One JSON array of records instead of a table'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from show" -l json -d 'The record as JSON instead of `key: value` lines'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from output" -l tail -d 'Only the last BYTES bytes (read by seeking from the end)' -r
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from output" -l follow -d 'Keep printing new output until the task ends (or Ctrl-C)'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from output" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from output" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from stop" -l json -d 'The final record as JSON'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from stop" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from stop" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from gc" -l older-than -d 'Only tasks that ended longer ago than this (`30m`, `12h`, `7d`, `2w`)' -r
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from gc" -l dry-run -d 'Say what would be deleted, delete nothing'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from gc" -l json -d 'The report as JSON'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from gc" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand tasks; and __fish_seen_subcommand_from gc" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand sessions; and not __fish_seen_subcommand_from list show rm gc" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand sessions; and not __fish_seen_subcommand_from list show rm gc" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand sessions; and not __fish_seen_subcommand_from list show rm gc" -f -a "list" -d 'List sessions, most recently used first'
complete -c zero -n "__fish_zero_using_subcommand sessions; and not __fish_seen_subcommand_from list show rm gc" -f -a "show" -d 'Show one session: its record, then its conversation'
complete -c zero -n "__fish_zero_using_subcommand sessions; and not __fish_seen_subcommand_from list show rm gc" -f -a "rm" -d 'Delete a session (refused while a run uses it)'
complete -c zero -n "__fish_zero_using_subcommand sessions; and not __fish_seen_subcommand_from list show rm gc" -f -a "gc" -d 'Delete the sessions last used longer ago than a cutoff (never one in use)'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from list" -l json -d 'One JSON array of session records instead of a table'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from show" -l json -d '`{"session": record, "messages": [...]}` instead of text'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from rm" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from gc" -l older-than -d 'Only sessions last used longer ago than this (`12h`, `7d`, `2w`)' -r
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from gc" -l dry-run -d 'Say what would be deleted, delete nothing'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from gc" -l json -d 'The report as JSON'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from gc" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand sessions; and __fish_seen_subcommand_from gc" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand replay; and not __fish_seen_subcommand_from show check" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand replay; and not __fish_seen_subcommand_from show check" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand replay; and not __fish_seen_subcommand_from show check" -f -a "show" -d 'Print the recorded run as `-o text` printed it (progress on stderr, the answer on stdout), each specialist after it'
complete -c zero -n "__fish_zero_using_subcommand replay; and not __fish_seen_subcommand_from show check" -f -a "check" -d 'Check a cassette: every line\'s schema, its version, every request\'s hash; exit 2 naming the first line that is wrong'
complete -c zero -n "__fish_zero_using_subcommand replay; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand replay; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand replay; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand replay; and __fish_seen_subcommand_from check" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and not __fish_seen_subcommand_from list show rm gc" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and not __fish_seen_subcommand_from list show rm gc" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and not __fish_seen_subcommand_from list show rm gc" -f -a "list" -d 'List worktrees, by name'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and not __fish_seen_subcommand_from list show rm gc" -f -a "show" -d 'Show one worktree\'s record'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and not __fish_seen_subcommand_from list show rm gc" -f -a "rm" -d 'Delete a worktree: its directory, lock, branch and record (refused while a run uses it)'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and not __fish_seen_subcommand_from list show rm gc" -f -a "gc" -d 'Delete the records (and kept directories) of worktrees that ended longer ago than a cutoff; their branches stay'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from list" -l json -d 'One JSON array of records instead of a table'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from list" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from show" -l json -d 'The record as JSON instead of `key: value` lines'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from show" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from rm" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from gc" -l older-than -d 'Only worktrees that ended longer ago than this (`12h`, `7d`, `2w`)' -r
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from gc" -l include-interrupted -d 'Interrupted worktrees too (their directories may hold uncommitted work)'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from gc" -l dry-run -d 'Say what would be deleted, delete nothing'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from gc" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand worktrees; and __fish_seen_subcommand_from gc" -s V -l version -d 'Print version'
complete -c zero -n "__fish_zero_using_subcommand __generate" -l completions -d 'Directory that receives the shell completions' -r -F
complete -c zero -n "__fish_zero_using_subcommand __generate" -l man -d 'Directory that receives the man pages' -r -F
complete -c zero -n "__fish_zero_using_subcommand __generate" -s h -l help -d 'Print help'
complete -c zero -n "__fish_zero_using_subcommand __generate" -s V -l version -d 'Print version'

# convo-doctor: check ids inside a comma list, and repair run ids.
function __fish_convo_doctor_check_list
    set -l token (commandline -ct | string replace -r -- '^--[a-z-]+=' '')
    set -l head (string match -r -- '^.*,' $token)
    for id in changed-during-read interrupted-repair empty-conversation unreadable-state id-mismatch false-root unreadable-event unknown-kind unknown-field invalid-event invalid-state index-gap duplicate-index duplicate-event-id filename-id-mismatch bad-event-filename dangling-parent parent-cycle out-of-order stale-leaf head-lag misparented-recovery-error legacy-tail-hazard stale-running abandoned-branch meta-divergence meta-duplicate plaintext-secret live-lease not-listed shadowed secret-undecryptable invalid-row v0-row row-without-events events-without-row copy-missing-events copy-extra-events s3-listing-limit user-prefix-split unmigrated-event-layout row-status-divergence row-title-divergence claude-broken-parent claude-invalid-line claude-duplicate-uuid claude-unpaired-tool codex-missing-session-meta codex-invalid-line codex-duplicate-line codex-unpaired-call codex-state-parity
        printf '%s%s\n' "$head" $id
    end
end
function __fish_convo_doctor_runs
    # the repair run ids `convo-doctor __complete-runs` prints
    set -l words (commandline -opc)
    set -l root
    for i in (seq (count $words))
        if test "$words[$i]" = --backup-dir
            set root $words[(math $i + 1)]
        else if string match -q -- '--backup-dir=*' $words[$i]
            set root (string replace -- '--backup-dir=' '' $words[$i])
        end
    end
    set -l args
    if test -n "$root"
        set args --backup-dir (string replace -r -- '^~(?=/|$)' $HOME $root)
    end
    command convo-doctor __complete-runs $args 2>/dev/null
end
# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_convo_doctor_global_optspecs
    string join \n color= h/help V/version
end

function __fish_convo_doctor_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_convo_doctor_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_convo_doctor_using_subcommand
    set -l cmd (__fish_convo_doctor_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -s V -l version -d 'Print version'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "diagnose" -d 'Report what is wrong with conversations (read-only)'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "repair" -d 'Repair what can be repaired: safe repairs always, unsafe ones with --unsafe-fixes'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "undo" -d 'Restore the files a repair run changed (unless they changed since)'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "explain" -d 'Explain a check: what it finds, why it matters, how it is repaired'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "man" -d 'Print a man page (roff) to stdout: convo-doctor(1), or with a COMMAND, convo-doctor-COMMAND(1)'
complete -c convo-doctor -n "__fish_convo_doctor_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l db -d 'The app server\'s database, to relate its rows (`conversation_metadata`) to the folders: `sqlite:PATH` (default `~/.openhands/openhands.db`) or `postgres://USER[:PASS]@HOST[:PORT]/DB` (read only; docs/appserver.md). Give Postgres\'s password through `PGPASSWORD` or `~/.pgpass` (`PGPASSFILE`), as for psql, not in the URL: a command line is visible to every local user' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l db-timeout -d 'Give up on the database when it answers nothing for this long: connecting (the server\'s greeting and authentication included), each statement (Postgres\'s `statement_timeout`), SQLite\'s locks and queries' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l events-store -d 'The app server\'s copy of the events: its persistence directory (which holds `v1_conversations/`), `s3://BUCKET[/PREFIX]` or `gs://BUCKET[/PREFIX]` (prefix default `users`); read only' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l format -d 'Output format' -r -f -a "human\t'Readable text, one block per conversation, then a summary'
json\t'One JSON document: {"schema_version", "conversations", "summary"}'
jsonl\t'One JSON object per line per conversation, then a {"summary"} line'
concise\t'One greppable line per finding: `PATH/FILE: severity[check] message`'
prometheus\t'The run\'s totals as Prometheus metrics, for node_exporter\'s textfile collector'
markdown\t'A redacted report to paste into a ticket or a GitHub issue: findings tables and each tree as a Mermaid graph'"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l server-version -d 'Server/SDK version whose rules apply (name rule, leaf rule, known kinds, the pydantic models events and base_state.json must fit, which copy of a duplicated field wins). Default: the newest known, as for `repair`' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l fail-on -d 'Exit 1 when a finding is at or above this severity' -r -f -a "info\t''
warning\t''
error\t''
never\t'Always exit 0 when the scan completes'"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l only -d 'Run only these checks (comma-separated ids; see `convo-doctor explain`)' -r -f -a "(__fish_convo_doctor_check_list)"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l skip -d 'Skip these checks (comma-separated ids)' -r -f -a "(__fish_convo_doctor_check_list)"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l since -d 'Only scan conversations modified within this long (e.g. 90m, 25h, 7d, 1h30m): the folder, base_state.json, meta.json, events/ or an event file has an mtime within it' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l changed-since -d 'Only scan conversations modified at or after FILE\'s mtime (say, a file touched when the previous run started); a missing FILE means scan everything' -r -F
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l shard -d 'Scan only shard K of N (K from 0 to N-1), split by a stable hash of the conversation id; the N outputs together cover the store once' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l id -d 'Only this conversation (repeatable): its folder among the PATHs, its row and its event copy. The id as the UI\'s URL shows it, dashed as the database keeps it, or the start of either; one that names no conversation, or several, is an error naming it (exit 2). The exit status and the summary are those of the conversations named' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -s j -l jobs -d 'Worker threads analysing conversations (default: one per core)' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -s o -l output-file -d 'Write the report to FILE instead of stdout, atomically: into a temporary file in FILE\'s folder, renamed over FILE once complete, so a reader (node_exporter\'s textfile collector) never sees half a report. Written whatever the exit status, once the scan has run' -r -F
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l events -d 'List every event: index, kind, source, parent, whether the agent sees it'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l tree -d 'Draw each conversation\'s event tree, root first: the agent\'s branch as the trunk, the events it does not see collapsed by reason, long runs collapsed (human format; `--format markdown` always draws it)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l allow-empty -d 'Accept a PATH that holds no conversation (by default that is an error, exit 2, so a failed mount in a cron job is noticed)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -l hide-clean -d 'Leave out of the report the conversations with nothing at or above --fail-on (with `never`: nothing above info); one that cannot load is always shown. The summary still counts them all'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -s q -l quiet -d 'Print nothing when the exit status is 0 (for cron, which mails what a job prints): the report, warnings and notes are held back and printed only when it is 1 or 2. No progress bar'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand diagnose" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l format -d 'Output format: `human`, or per conversation the changes planned or applied and the findings left and refused, with their reasons, as `json` (one document) or `jsonl` (one line per conversation, then a summary line); no diffs, no event content' -r -f -a "human\t'Diffs, what was (or would be) fixed, what is left and why, a summary by check'
json\t'One JSON document: {"schema_version", "conversations", "summary"}'
jsonl\t'One JSON object per line per conversation, then a {"summary"} line'"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l server-version -d 'The server version that will open these folders. Its rules are applied (default: the newest known, as for `diagnose`); only when it is given, and is 1.43.0 or newer, is meta.json\'s copy of the agent dropped. Left out, that copy is synced instead, which every server accepts (servers before 1.43 require it)' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l fail-on -d 'Exit 1 when a finding at or above this severity remains' -r -f -a "info\t''
warning\t''
error\t''
never\t'Always exit 0 when the scan completes'"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l only -d 'Repair only these checks (comma-separated ids)' -r -f -a "(__fish_convo_doctor_check_list)"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l skip -d 'Do not repair these checks (comma-separated ids); their findings are left, as with --only' -r -f -a "(__fish_convo_doctor_check_list)"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l since -d 'Only look at conversations modified within this long (e.g. 90m, 25h, 7d), as for `diagnose`' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l changed-since -d 'Only look at conversations modified at or after FILE\'s mtime (a missing FILE means all of them), as for `diagnose`' -r -F
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l shard -d 'Only look at shard K of N (K from 0 to N-1), split as for `diagnose`' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l id -d 'Only this conversation (repeatable): its folder among the PATHs, by the id its folder is named after, as the UI\'s URL shows it, dashed, or the start of either; one that names no folder, or several, is an error naming it (exit 2) and nothing is repaired' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -s j -l jobs -d 'Worker threads reading conversations and planning their repairs (default: one per core); repairs are applied one at a time, in path order' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -s o -l output-file -d 'Write the report to FILE instead of stdout, atomically (a temporary file in FILE\'s folder, renamed over FILE once complete)' -r -F
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l backup-dir -d 'Where backups go (default: $XDG_STATE_HOME/convo-doctor/backups or ~/.local/state/convo-doctor/backups)' -r -F
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l diff-format -d 'With --dry-run, the diff\'s form: `unified` (JSON pretty-printed and event content masked, for reading) or `patch` (the files\' real bytes, on stdout alone, for `patch -p1` or `git apply` run from the folder holding the conversation; needs --show-content for event files; everything else goes to stderr)' -r -f -a "unified\t'For reading: JSON pretty-printed, event content masked'
patch\t'For `patch -p1` / `git apply`: the real bytes, or no patch at all'"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l dry-run -d 'Show what would change (in human output, the diff of every file), and write nothing'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l allow-empty -d 'Accept a PATH that holds no conversation (by default an error, exit 2, as for `diagnose`)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l changes-only -d 'Report only the conversations with something planned, applied, refused or failed (the summary still counts them all)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -s q -l quiet -d 'Print nothing when the exit status is 0 (for cron): the report, warnings and notes are held back and printed only when it is 1 or 2 (`undo --list` still lists the run)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l unsafe-fixes -d 'Also make the unsafe repairs (the agent loses sight of something: a quarantined event, a probable false root re-linked). Without it they are listed, not made'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l accept-ambiguous -d 'Deprecated: the old name of --unsafe-fixes'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -l show-content -d 'Show event content in diffs (by default an event\'s unchanged strings, except ids, kinds, sources and timestamps, are shown as their length)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand repair" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l backup-dir -d 'The backup directory given to `repair`, if any' -r -F
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l format -d 'With --list: `human`, or `json` (one document: the backup directory and, per run, its id, creation time, files, conversations, state and the command that undoes it)' -r -f -a "human\t'One line per run'
json\t'One JSON document: {"schema_version", "backup_dir", "runs"}'"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l older-than -d 'With --prune: the age (e.g. 30d, 12h, 1h30m) from which a run is removed, measured from the last write of its manifest' -r
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l list -d 'List the repair runs under the backup directory, oldest first, with what each changed and whether it can still be undone; restore nothing'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l prune -d 'Remove the run folders older than --older-than from the backup directory: only folders that are yours, private (0700) and not links, with a manifest you own. A run that can still be undone is kept unless --force; restore nothing'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l force -d 'With --prune: remove old runs that can still be undone too (their backup is the only copy of the bytes the repair replaced)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -l dry-run -d 'Say what would be done, and change nothing: with a run id, what `undo` would do with each file; with --prune, what would be removed'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand explain" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand completions" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand completions" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand man" -l color -d 'When to use colour in human output (NO_COLOR is honoured by `auto`)' -r -f -a "auto\t'Colour when stdout is a terminal, NO_COLOR is unset and TERM is not dumb'
always\t''
never\t''"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand man" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "diagnose" -d 'Report what is wrong with conversations (read-only)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "repair" -d 'Repair what can be repaired: safe repairs always, unsafe ones with --unsafe-fixes'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "undo" -d 'Restore the files a repair run changed (unless they changed since)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "explain" -d 'Explain a check: what it finds, why it matters, how it is repaired'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "man" -d 'Print a man page (roff) to stdout: convo-doctor(1), or with a COMMAND, convo-doctor-COMMAND(1)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand help; and not __fish_seen_subcommand_from diagnose repair undo explain completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand explain" -f -a "changed-during-read interrupted-repair empty-conversation unreadable-state id-mismatch false-root unreadable-event unknown-kind unknown-field invalid-event invalid-state index-gap duplicate-index duplicate-event-id filename-id-mismatch bad-event-filename dangling-parent parent-cycle out-of-order stale-leaf head-lag misparented-recovery-error legacy-tail-hazard stale-running abandoned-branch meta-divergence meta-duplicate plaintext-secret live-lease not-listed shadowed secret-undecryptable invalid-row v0-row row-without-events events-without-row copy-missing-events copy-extra-events s3-listing-limit user-prefix-split unmigrated-event-layout row-status-divergence row-title-divergence claude-broken-parent claude-invalid-line claude-duplicate-uuid claude-unpaired-tool codex-missing-session-meta codex-invalid-line codex-duplicate-line codex-unpaired-call codex-state-parity"
complete -c convo-doctor -n "__fish_convo_doctor_using_subcommand undo" -f -a "(__fish_convo_doctor_runs)" -d 'repair run'

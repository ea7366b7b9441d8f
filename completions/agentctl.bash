# agentctl bash completion: generated from the command registry by `agentctl completion bash`; do not edit
# Live values (profiles, agents, tasks, versions, branches) come from the hidden `agentctl __complete KIND`: quick, silent on errors.
_agentctl_dynamic() { "$cmd" __complete "$1" ${profile:+--profile "$profile"} ${agent:+--agent "$agent"} 2>/dev/null; }
_agentctl() {
  local cur prev words cword
  words=("${COMP_WORDS[@]}"); cword=$COMP_CWORD
  cur="${COMP_WORDS[COMP_CWORD]}"; prev="${COMP_WORDS[COMP_CWORD-1]}"
  local cmd="${words[0]}"
  local noun="" verb="" profile="" agent="" skip=0 i w
  for ((i = 1; i < cword; i++)); do
    w="${words[i]}"
    if ((skip)); then skip=0; continue; fi
    case "$w" in
      --profile) profile="${words[i+1]}"; skip=1; continue ;;
      --agent|-a) agent="${words[i+1]}"; skip=1; continue ;;
      --acp-type|--after|--agent|--api-key|--base-url|--branch|--cron|--data|--data-dir|--database-url|--description|--double-texting|--env|--event|--expires|--file|--from|--from-sequence|--fs|--group|--host|--if-match|--image|--jq|--limit|--log-level|--max-error-rate|--max-events|--metrics-port|--missed|--name|--namespace|--on|--on-version|--page|--params|--port|--preset|--profile|--project|--reason|--replicas|--rollout|--rule|--runtime|--sample|--scope|--sdk-type|--since|--status|--steps|--tail|--task|--timeout|--to|--trace|--turn|--tz|--user|--value-file|--watch|-a|-n) skip=1; continue ;;
      -*) continue ;;
    esac
    if [[ -z "$noun" ]]; then noun="$w"; elif [[ -z "$verb" ]]; then verb="$w"; fi
  done
  case "$noun $verb" in 'keys rm') verb=revoke ;; esac
  case "$verb" in ls) verb=list ;; rm) verb=delete ;; esac
  case "$noun${verb:+ $verb}" in
    'server start')
      case "$prev" in
        --runtime) COMPREPLY=($(compgen -W 'local kubernetes none' -- "$cur")); return ;;
        --log-level) COMPREPLY=($(compgen -W 'fatal error warn info debug trace silent' -- "$cur")); return ;;
      esac ;;
    'init')
      case "$prev" in
        --acp-type) COMPREPLY=($(compgen -W 'sync async' -- "$cur")); return ;;
      esac ;;
    'deploy')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
        --sdk-type) COMPREPLY=($(compgen -W 'alpha_agent_sdk beta_agent_sdk' -- "$cur")); return ;;
        --acp-type) COMPREPLY=($(compgen -W 'sync async' -- "$cur")); return ;;
        --double-texting) COMPREPLY=($(compgen -W 'enqueue interrupt reject merge' -- "$cur")); return ;;
      esac ;;
    'rollback')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
        --to) COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); return ;;
      esac ;;
    'logs')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
      esac ;;
    'branches list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'branches get')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'branches retire')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'versions list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
        --status) COMPREPLY=($(compgen -W 'DEPLOYING ACTIVE FAILED UNHEALTHY DRAINING RETIRED ROLLED_BACK' -- "$cur")); return ;;
      esac ;;
    'versions get')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'versions credentials')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'versions register')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --status) COMPREPLY=($(compgen -W 'ACTIVE UNHEALTHY FAILED' -- "$cur")); return ;;
      esac ;;
    'envs list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'envs get')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'envs create')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'envs update')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'envs delete')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'envs resolve')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
      esac ;;
    'secrets list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'secrets set')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'secrets delete')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'tasks list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
        --on-version) COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); return ;;
        --status) COMPREPLY=($(compgen -W 'IDLE CANCELED COMPLETED FAILED RUNNING TERMINATED TIMED_OUT DELETED' -- "$cur")); return ;;
      esac ;;
    'tasks create')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
      esac ;;
    'tasks migrate')
      case "$prev" in
        --from) COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); return ;;
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
        --to) COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); return ;;
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'states list')
      case "$prev" in
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'states get')
      case "$prev" in
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'states put')
      case "$prev" in
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'states delete')
      case "$prev" in
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'states history')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'keys create')
      case "$prev" in
        --preset) COMPREPLY=($(compgen -W 'deploy read-only agent-runner custom' -- "$cur")); return ;;
      esac ;;
    'migrations list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
    'rollouts list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --status) COMPREPLY=($(compgen -W 'RUNNING PAUSED SUCCEEDED REVERTED ABORTED' -- "$cur")); return ;;
      esac ;;
    'schedules list')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --status) COMPREPLY=($(compgen -W 'ACTIVE PAUSED' -- "$cur")); return ;;
      esac ;;
    'schedules create')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
        --branch) COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); return ;;
        --task) COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); return ;;
        --missed) COMPREPLY=($(compgen -W 'skip catch-up-one' -- "$cur")); return ;;
      esac ;;
    'status')
      case "$prev" in
        --agent|-a) COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); return ;;
      esac ;;
  esac
  case "$prev" in
    --profile) COMPREPLY=($(compgen -W "$(_agentctl_dynamic profiles)" -- "$cur")); return ;;
  esac
  local globals='--json --jq --wide --profile --base-url --api-key --no-color --quiet -q --debug --non-interactive --yes -y --version -v --help -h'
  if [[ -z "$noun" ]]; then COMPREPLY=($(compgen -W "auth config server init deploy rollback logs namespaces projects agents branches versions envs secrets tasks states keys groups fs completion dev migrations open rehearsals rollouts schedules status trace $globals" -- "$cur")); return; fi
  case "$noun" in
    auth) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'login logout status' -- "$cur")); return; fi ;;
    config) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get set use' -- "$cur")); return; fi ;;
    server) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'secrets-rotate-key start status stop' -- "$cur")); return; fi ;;
    namespaces) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list create' -- "$cur")); return; fi ;;
    projects) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list create' -- "$cur")); return; fi ;;
    agents) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get delete' -- "$cur")); return; fi ;;
    branches) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get retire' -- "$cur")); return; fi ;;
    versions) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get credentials register' -- "$cur")); return; fi ;;
    envs) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get create update delete resolve' -- "$cur")); return; fi ;;
    secrets) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list set delete' -- "$cur")); return; fi ;;
    tasks) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get create delete cancel events interrupt messages migrate replay send trace watch' -- "$cur")); return; fi ;;
    states) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get put delete history' -- "$cur")); return; fi ;;
    keys) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get create revoke rotate' -- "$cur")); return; fi ;;
    groups) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list create add-member remove-member' -- "$cur")); return; fi ;;
    fs) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get create files pull push' -- "$cur")); return; fi ;;
    migrations) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get undo' -- "$cur")); return; fi ;;
    rehearsals) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'get' -- "$cur")); return; fi ;;
    rollouts) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get abort pause resume' -- "$cur")); return; fi ;;
    schedules) if [[ -z "$verb" ]]; then COMPREPLY=($(compgen -W 'list get create delete pause resume trigger' -- "$cur")); return; fi ;;
  esac
  case "$noun${verb:+ $verb}" in
    'auth login') COMPREPLY=($(compgen -W "--with-token $globals" -- "$cur")) ;;
    'auth logout') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'auth status') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'config list') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'config get') COMPREPLY=($(compgen -W "--reveal base_url api_key current_profile $globals" -- "$cur")) ;;
    'config set') COMPREPLY=($(compgen -W "base_url api_key $globals" -- "$cur")) ;;
    'config use') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic profiles)" -- "$cur")); fi ;;
    'server secrets-rotate-key') COMPREPLY=($(compgen -W "--data-dir --database-url --new-key-stdin $globals" -- "$cur")) ;;
    'server start') COMPREPLY=($(compgen -W "--host --port --data-dir --database-url --detach --runtime --log-level --metrics-port $globals" -- "$cur")) ;;
    'server status') COMPREPLY=($(compgen -W "--data-dir $globals" -- "$cur")) ;;
    'server stop') COMPREPLY=($(compgen -W "--data-dir --timeout $globals" -- "$cur")) ;;
    'init') COMPREPLY=($(compgen -W "--agent -a --acp-type --force --no-git $globals" -- "$cur")) ;;
    'deploy') COMPREPLY=($(compgen -W "--agent -a --image --branch --replicas --sticky --no-sticky --sdk-type --acp-type --description --double-texting --allow-dirty --force --timeout --detach $globals" -- "$cur")) ;;
    'rollback') COMPREPLY=($(compgen -W "--agent -a --branch --to --timeout --detach $globals" -- "$cur")) ;;
    'logs') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a --branch --follow -f --since --tail --task --trace $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); fi ;;
    'namespaces list') COMPREPLY=($(compgen -W "--limit --page --all $globals" -- "$cur")) ;;
    'namespaces create') COMPREPLY=($(compgen -W "--name $globals" -- "$cur")) ;;
    'projects list') COMPREPLY=($(compgen -W "--namespace -n --limit --page --all $globals" -- "$cur")) ;;
    'projects create') COMPREPLY=($(compgen -W "--namespace -n --description $globals" -- "$cur")) ;;
    'agents list') COMPREPLY=($(compgen -W "--namespace -n --limit --page --all $globals" -- "$cur")) ;;
    'agents get') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); fi ;;
    'agents delete') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic agents)" -- "$cur")); fi ;;
    'branches list') COMPREPLY=($(compgen -W "--agent -a --include-retired --env $globals" -- "$cur")) ;;
    'branches get') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); fi ;;
    'branches retire') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a --reason --force $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic branches)" -- "$cur")); fi ;;
    'versions list') COMPREPLY=($(compgen -W "--agent -a --branch --status --limit $globals" -- "$cur")) ;;
    'versions get') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a --events $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); fi ;;
    'versions credentials') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); fi ;;
    'versions register') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a --status --reason $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic versions)" -- "$cur")); fi ;;
    'envs list') COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")) ;;
    'envs get') COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")) ;;
    'envs create') COMPREPLY=($(compgen -W "--agent -a --rule --description $globals" -- "$cur")) ;;
    'envs update') COMPREPLY=($(compgen -W "--agent -a --rule --description $globals" -- "$cur")) ;;
    'envs delete') COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")) ;;
    'envs resolve') COMPREPLY=($(compgen -W "--agent -a --branch $globals" -- "$cur")) ;;
    'secrets list') COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")) ;;
    'secrets set') COMPREPLY=($(compgen -W "--agent -a --env --value-stdin --value-file $globals" -- "$cur")) ;;
    'secrets delete') COMPREPLY=($(compgen -W "--agent -a --env $globals" -- "$cur")) ;;
    'tasks list') COMPREPLY=($(compgen -W "--agent -a --branch --on-version --status --include-shadows --limit --page --all $globals" -- "$cur")) ;;
    'tasks get') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks create') COMPREPLY=($(compgen -W "--agent -a --branch --name --params --project --watch $globals" -- "$cur")) ;;
    'tasks delete') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks cancel') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks events') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--after --limit $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks interrupt') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W " $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks messages') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--after --limit $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks migrate') COMPREPLY=($(compgen -W "--from --task --to --to-latest --agent -a --dry-run --steps --watch --max-error-rate --follow --rehearse --sample --max-events $globals" -- "$cur")) ;;
    'tasks replay') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--on --from-sequence --max-events $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks send') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--data --watch $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks trace') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--turn --db $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'tasks watch') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--after --retry --until-idle $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'states list') COMPREPLY=($(compgen -W "--task --agent -a $globals" -- "$cur")) ;;
    'states get') COMPREPLY=($(compgen -W "--task --agent -a $globals" -- "$cur")) ;;
    'states put') COMPREPLY=($(compgen -W "--task --agent -a --data --file --merge --if-match $globals" -- "$cur")) ;;
    'states delete') COMPREPLY=($(compgen -W "--task --agent -a --if-match $globals" -- "$cur")) ;;
    'states history') if [[ "$cur" == -* ]]; then COMPREPLY=($(compgen -W "--agent -a --limit --page --all $globals" -- "$cur")); else COMPREPLY=($(compgen -W "$(_agentctl_dynamic tasks)" -- "$cur")); fi ;;
    'keys list') COMPREPLY=($(compgen -W "--include-revoked $globals" -- "$cur")) ;;
    'keys get') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'keys create') COMPREPLY=($(compgen -W "--preset --scope --group --name --description --expires $globals" -- "$cur")) ;;
    'keys revoke') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'keys rotate') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'groups list') COMPREPLY=($(compgen -W "--limit --page --all $globals" -- "$cur")) ;;
    'groups create') COMPREPLY=($(compgen -W "--description $globals" -- "$cur")) ;;
    'groups add-member') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'groups remove-member') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'fs list') COMPREPLY=($(compgen -W "--project --namespace -n --limit --page --all $globals" -- "$cur")) ;;
    'fs get') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'fs create') COMPREPLY=($(compgen -W "--project --namespace -n $globals" -- "$cur")) ;;
    'fs files') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'fs pull') COMPREPLY=($(compgen -W "--fs $globals" -- "$cur")) ;;
    'fs push') COMPREPLY=($(compgen -W "--fs --force $globals" -- "$cur")) ;;
    'completion') COMPREPLY=($(compgen -W "bash zsh fish $globals" -- "$cur")) ;;
    'dev') COMPREPLY=($(compgen -W "--keep --user $globals" -- "$cur")) ;;
    'migrations list') COMPREPLY=($(compgen -W "--agent -a --rollout --limit --page --all $globals" -- "$cur")) ;;
    'migrations get') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'migrations undo') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'open') COMPREPLY=($(compgen -W "--print $globals" -- "$cur")) ;;
    'rehearsals get') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'rollouts list') COMPREPLY=($(compgen -W "--agent -a --status --limit --page --all $globals" -- "$cur")) ;;
    'rollouts get') COMPREPLY=($(compgen -W "--follow -f $globals" -- "$cur")) ;;
    'rollouts abort') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'rollouts pause') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'rollouts resume') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'schedules list') COMPREPLY=($(compgen -W "--agent -a --status --limit --page --all $globals" -- "$cur")) ;;
    'schedules get') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'schedules create') COMPREPLY=($(compgen -W "--agent -a --cron --tz --name --params --branch --task --event --missed $globals" -- "$cur")) ;;
    'schedules delete') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'schedules pause') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'schedules resume') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'schedules trigger') COMPREPLY=($(compgen -W " $globals" -- "$cur")) ;;
    'status') COMPREPLY=($(compgen -W "--agent -a $globals" -- "$cur")) ;;
    'trace') COMPREPLY=($(compgen -W "--db $globals" -- "$cur")) ;;
  esac
}
complete -o default -F _agentctl agentctl

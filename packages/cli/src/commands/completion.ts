// kubit completion bash|zsh: a script that completes verbs, resource types
// (from the server's discovery) and object names.

import { CliError } from '../errors.js';
import type { Factory } from '../factory.js';
import { VERBS } from '../run.js';

function bashScript(): string {
  return `# bash completion for kubit
# Load with: source <(kubit completion bash)
_kubit_complete() {
  local cur prev words cword
  cur="\${COMP_WORDS[COMP_CWORD]}"
  local verb="" type="" i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in
      -*) ;;
      *) if [[ -z "$verb" ]]; then verb="\${COMP_WORDS[i]}"; elif [[ -z "$type" ]]; then type="\${COMP_WORDS[i]}"; fi ;;
    esac
  done
  if [[ -z "$verb" ]]; then
    COMPREPLY=( $(compgen -W "${VERBS.join(' ')}" -- "$cur") )
    return
  fi
  case "$verb" in
    get|describe|delete|label|annotate|wait)
      if [[ -z "$type" ]]; then
        COMPREPLY=( $(compgen -W "$(kubit api-resources -o name 2>/dev/null | sed 's/\\..*//')" -- "$cur") )
      else
        COMPREPLY=( $(compgen -W "$(kubit get "$type" -o jsonpath='{.items[*].metadata.name}' 2>/dev/null)" -- "$cur") )
      fi ;;
    logs)
      COMPREPLY=( $(compgen -W "$(kubit get pods -o jsonpath='{.items[*].metadata.name}' 2>/dev/null)" -- "$cur") ) ;;
    config)
      COMPREPLY=( $(compgen -W "view current-context use-context get-contexts set-context" -- "$cur") ) ;;
    completion)
      COMPREPLY=( $(compgen -W "bash zsh" -- "$cur") ) ;;
  esac
}
complete -o default -F _kubit_complete kubit
`;
}

function zshScript(): string {
  return `#compdef kubit
# zsh completion for kubit
# Load with: source <(kubit completion zsh)
autoload -U +X bashcompinit && bashcompinit
${bashScript()}`;
}

export async function completion(f: Factory, args: string[]): Promise<void> {
  const shell = args[0];
  if (shell === 'bash') f.io.out.write(bashScript());
  else if (shell === 'zsh') f.io.out.write(zshScript());
  else throw new CliError(`Unsupported shell type "${shell}".`);
}

#!/usr/bin/env python3
"""The man page (`man`) and bash completion (`bash`) of the fabemu CLI, generated from its own
--help (CLI11's layout), so that neither can drift from the binary.

usage: cli-docs.py man|bash FABEMU > OUT
"""
import re
import subprocess
import sys
from datetime import date


def help_of(fabemu, path):
    return subprocess.run([fabemu, *path, "--help"], capture_output=True, text=True,
                          check=True).stdout


def sections(text):
    """CLI11's help: a description, Usage:, then "Positionals:", "Options:", "Subcommands:"."""
    out, name = {"description": []}, "description"
    for line in text.splitlines():
        m = re.match(r"^(Usage|Positionals|Options|Subcommands):(.*)$", line)
        if m:
            name = m.group(1).lower()
            out[name] = [m.group(2).strip()] if m.group(2).strip() else []
        elif line.strip():
            out.setdefault(name, []).append(line)
    return out


def entries(lines):
    """'  --lab TEXT   Lab name' -> ('--lab TEXT', 'Lab name'); continuation lines joined."""
    items = []
    for line in lines:
        m = re.match(r"^  (\S.*?)(?:\s{2,}(.*))?$", line)
        if m and not line.startswith("    "):
            items.append([m.group(1).strip(), (m.group(2) or "").strip()])
        elif items:
            items[-1][1] += " " + line.strip()
    return items


def walk(fabemu, path=()):
    """Every command, depth first: (path, sections)."""
    s = sections(help_of(fabemu, list(path)))
    yield path, s
    for name, _ in entries(s.get("subcommands", [])):
        yield from walk(fabemu, (*path, name))


def roff(text):
    return text.replace("\\", "\\\\").replace("-", "\\-").replace("'", "\\(aq")


def man(fabemu):
    cmds = list(walk(fabemu))
    top = cmds[0][1]
    out = [f'.TH FABEMU 1 "{date.today().isoformat()}" "fabemu" "User Commands"',
           ".SH NAME", "fabemu \\- " + roff(top["description"][0].split(": ", 1)[-1]),
           ".SH SYNOPSIS", ".B fabemu", "\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]",
           ".SH DESCRIPTION"]
    out += [roff(l.strip()) for l in top["description"]]
    out.append(".SH COMMANDS")
    for path, s in cmds[1:]:
        usage = (s.get("usage") or [""])[0]
        usage = re.sub(r"^\S*fabemu", "fabemu", usage)
        out += [".SS " + roff(" ".join(path)), roff(" ".join(l.strip() for l in s["description"])),
                ".PP", ".B " + roff(usage)]
        for title in ("positionals", "options"):
            for flag, desc in entries(s.get(title, [])):
                if flag.startswith("-h,--help"):
                    continue
                out += [".TP", "\\fB" + roff(flag) + "\\fR", roff(desc)]
    out += [".SH FILES", "/run/fabemu/LAB (a lab's run tree), /sys/fs/bpf/fabemu/LAB (its "
            "link model's maps), /usr/share/fabemu/scenarios (shipped scenarios).",
            ".SH SEE ALSO", "/usr/share/doc/fabemu (README.md and docs/), "
            "\\fBpytest\\fR(1) with the fabemu plugin (python3 \\-m pytest)."]
    return "\n".join(out) + "\n"


def bash(fabemu):
    cmds = list(walk(fabemu))
    words = {}
    for path, s in cmds:
        subs = [n for n, _ in entries(s.get("subcommands", []))]
        flags = []
        for flag, _ in entries(s.get("options", [])):
            for f in re.split(r"[, ]", flag):
                if re.fullmatch(r"--?[A-Za-z][\w-]*", f) and f not in ("-h", "--help"):
                    flags.append(f)
        words[" ".join(path)] = " ".join(subs + flags)
    cases = "\n".join(f'    "{k}") opts="{v}" ;;' for k, v in words.items())
    return f'''# bash completion for fabemu, generated from its --help by scripts/cli-docs.py
_fabemu() {{
  local cur=${{COMP_WORDS[COMP_CWORD]}} path="" w i opts
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${{COMP_WORDS[i]}}
    [[ $w == -* ]] && continue
    case "$path${{path:+ }}$w" in
{chr(10).join(f'      "{k}") path="{k}" ;;' for k in words if k)}
    esac
  done
  case "$path" in
{cases}
  esac
  if [[ $cur == -* || -n $opts ]]; then
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  fi
  # Scenario files and directories where a word is not a command or flag.
  if [[ ${{#COMPREPLY[@]}} -eq 0 && $cur != -* ]]; then
    COMPREPLY=($(compgen -f -X '!*.@(yaml|yml)' -- "$cur") $(compgen -d -- "$cur"))
  fi
}}
shopt -s extglob 2>/dev/null
complete -F _fabemu fabemu
'''


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in ("man", "bash"):
        sys.exit(__doc__)
    sys.stdout.write(man(sys.argv[2]) if sys.argv[1] == "man" else bash(sys.argv[2]))

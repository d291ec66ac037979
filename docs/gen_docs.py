#!/usr/bin/env python3
"""Generate the man page and the bash completion of gemmtune from its own --help texts.

Usage: gen_docs.py GEMMTUNE OUTDIR

Writes OUTDIR/gemmtune.1 (roff: the top-level help, then one section per command with its help
verbatim) and OUTDIR/gemmtune.bash (completion of command names, each command's options, and
file names). Nothing is written by hand twice: a new option appears in both once it is in a
command's --help. Exit status 0, or 1 when the binary's help cannot be read.
"""
import re
import subprocess
import sys


def helptext(binary, *args):
    r = subprocess.run([binary, *args, "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise RuntimeError("%s %s --help exited %d: %s" % (binary, " ".join(args), r.returncode,
                                                            r.stderr.strip()))
    return r.stdout


def commands(top):
    """The command names of the top-level help's command list, in its order."""
    out, inside = [], False
    for line in top.splitlines():
        if line.startswith("Commands"):
            inside = True
            continue
        if inside:
            m = re.match(r"^  ([a-z]+) ", line)
            if not m:
                if out:
                    break
                continue
            out.append(m.group(1))
    return out


def roff_escape(line):
    line = line.replace("\\", "\\e")
    if line.startswith(".") or line.startswith("'"):
        line = "\\&" + line
    return line


def options(text):
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text)) | {"--help"})


def man_page(version, top, helps):
    out = [
        '.TH GEMMTUNE 1 "" "gemmtune %s" "User Commands"' % version,
        ".SH NAME",
        "gemmtune \\- tune the GEMMs a workload issues, deploy the winners, prove they ran",
        ".SH SYNOPSIS",
        ".B gemmtune",
        ".I command",
        "[options]",
        ".SH DESCRIPTION",
        "This page is generated from the program's own help: \\fBgemmtune\\fR \\fIcommand\\fR "
        "\\fB\\-\\-help\\fR prints the same text for one command.",
        ".PP",
        ".nf",
    ]
    out += [roff_escape(l) for l in top.rstrip("\n").splitlines()]
    out += [".fi", ".SH COMMANDS"]
    for name, text in helps:
        out += [".SS gemmtune %s" % name, ".nf"]
        out += [roff_escape(l) for l in text.rstrip("\n").splitlines()]
        out += [".fi"]
    out += [".SH SEE ALSO", "The README of the gemmtune sources: the loop, the DB format, the "
            "environment variables (GEMMTUNE_DB, GEMMTUNE_LOG, GEMMTUNE_CAPTURE, ...).",
            ".PP",
            "docs/scale-out.md of the sources: tune \\-\\-shard under a Slurm array, srun, "
            "mpirun, torchrun and GNU parallel, which GPU each process takes, and deploying "
            "the merged DB to every rank.", ""]
    return "\n".join(out)


def completion(helps):
    names = " ".join(n for n, _ in helps)
    lines = [
        "# bash completion for gemmtune, generated from its --help texts (docs/gen_docs.py).",
        "_gemmtune() {",
        "  local cur=${COMP_WORDS[COMP_CWORD]} cmd=${COMP_WORDS[1]:-} i",
        "  for ((i = 1; i < COMP_CWORD; i++)); do",
        "    [ \"${COMP_WORDS[i]}\" = -- ] && { COMPREPLY=($(compgen -c -- \"$cur\")); return; }",
        "  done",
        "  if [ \"$COMP_CWORD\" -eq 1 ]; then",
        "    COMPREPLY=($(compgen -W \"%s help --help --version\" -- \"$cur\"))" % names,
        "    return",
        "  fi",
        "  local opts=",
        "  case $cmd in",
    ]
    for name, text in helps:
        lines.append("    %s) opts=\"%s\" ;;" % (name, " ".join(options(text))))
    lines += [
        "    help) COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;" % names,
        "  esac",
        "  if [[ $cur == -* ]]; then",
        "    COMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))",
        "  else",
        "    COMPREPLY=($(compgen -f -- \"$cur\"))",
        "  fi",
        "}",
        "complete -o filenames -F _gemmtune gemmtune",
        "",
    ]
    return "\n".join(lines)


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 64
    binary, outdir = argv[1], argv[2]
    try:
        top = helptext(binary)
        version = subprocess.run([binary, "--version"], capture_output=True, text=True,
                                 timeout=30).stdout.split()[-1]
        helps = [(c, helptext(binary, c)) for c in commands(top)]
    except (OSError, RuntimeError, subprocess.SubprocessError, IndexError) as e:
        sys.stderr.write("gen_docs: %s\n" % e)
        return 1
    if not helps:
        sys.stderr.write("gen_docs: no commands found in the top-level help\n")
        return 1
    with open(outdir + "/gemmtune.1", "w") as f:
        f.write(man_page(version, top, helps))
    with open(outdir + "/gemmtune.bash", "w") as f:
        f.write(completion(helps))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

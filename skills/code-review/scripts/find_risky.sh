#!/usr/bin/env bash
# Lists lines worth a second look in a review: constructs that panic, hide
# errors, run code from strings, or look like secrets or leftover debugging.
# Every hit is a question for the reviewer, not a verdict.
#
# Usage: bash find_risky.sh [PATH...]    (default: the current directory)
# Prints "file:line: text" grouped by category; always exits 0.

set -u

if [ "$#" -eq 0 ]; then
    set -- .
fi

# Folders that hold generated or third-party code.
excludes=(--exclude-dir=.git --exclude-dir=target --exclude-dir=node_modules
          --exclude-dir=.venv --exclude-dir=venv --exclude-dir=__pycache__
          --exclude-dir=dist --exclude-dir=build)

section() {
    local title=$1 pattern=$2
    shift 2
    local hits
    hits=$(grep -rnHIE "${excludes[@]}" "$@" -e "$pattern" -- "${paths[@]}" 2>/dev/null | head -n 50)
    if [ -n "$hits" ]; then
        printf '== %s\n%s\n\n' "$title" "$hits"
        found=1
    fi
}

paths=("$@")
found=0

section "Rust: may panic" \
    'unwrap\(\)|expect\(|panic!|unreachable!|todo!|unimplemented!|\[[^]]*len\(\) *- *1\]' \
    --include='*.rs'
section "Rust: unsafe code" '\bunsafe\b' --include='*.rs'
section "Python: hidden errors or code from strings" \
    'except *:|except +Exception *: *pass|\beval\(|\bexec\(|shell *= *True|pickle\.loads?\(' \
    --include='*.py'
section "JavaScript/TypeScript: code from strings or loose checks" \
    '\beval\(|new Function\(|innerHTML *=|[^=!]== *(null|undefined)' \
    --include='*.js' --include='*.ts' --include='*.jsx' --include='*.tsx'
section "Shell: unquoted expansion in rm or cd" 'rm +-[a-zA-Z]*r[a-zA-Z]* +\$[A-Za-z_]|cd +\$[A-Za-z_]' \
    --include='*.sh'
section "Leftover debugging" 'dbg!|console\.log\(|breakpoint\(\)|pdb\.set_trace' \
    --include='*.rs' --include='*.py' --include='*.js' --include='*.ts'
section "Possible secrets" \
    '(api[_-]?key|secret|passw(or)?d|token)[^:=]{0,20}[:=][^"'"'"']{0,20}["'"'"'][^"'"'"' ]{8,}|BEGIN [A-Z ]*PRIVATE KEY' \
    -i
section "Open questions" '\b(TODO|FIXME|XXX|HACK)\b'

if [ "$found" -eq 0 ]; then
    echo "No risky constructs found in: ${paths[*]}"
fi
exit 0

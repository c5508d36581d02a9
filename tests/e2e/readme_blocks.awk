# Extracts the README's tested blocks: every fenced block that follows a line
# `<!-- test: TAG [ARG] [(comment)] -->` is written to DIR/NN (NN its order),
# without the indentation of its fence, and listed in DIR/index as
# "NN TAG ARG". A marker with no block after it is an error, so a README edit
# cannot silently drop a tested step.
# Usage: awk -v dir=DIR -f readme_blocks.awk README.md
function fail(msg) { printf "readme_blocks: line %d: %s\n", NR, msg > "/dev/stderr"; err = 1 }

/^[ \t]*<!-- test: / {
    if (want) fail("marker with no block after it: " marker)
    marker = $0
    sub(/^[ \t]*<!-- test: /, "", marker)
    sub(/[ \t]*-->[ \t]*$/, "", marker)
    sub(/[ \t]*\(.*$/, "", marker)
    split(marker, word, " ")
    tag = word[1]; arg = word[2]
    want = 1
    next
}
want && /^[ \t]*```/ {
    match($0, /^[ \t]*/)
    indent = RLENGTH
    n++
    file = sprintf("%s/%02d", dir, n)
    printf "" > file
    printf "%02d %s %s\n", n, tag, arg > (dir "/index")
    want = 0; inblock = 1
    next
}
inblock && /^[ \t]*```[ \t]*$/ { close(file); inblock = 0; next }
inblock { print substr($0, indent + 1) > file; next }
want && NF { fail("marker with no block after it: " marker); want = 0 }
END {
    if (want) fail("marker with no block after it: " marker)
    if (inblock) fail("block not closed")
    exit err
}

# Turns a file into a NUL-terminated C array and its size (without the NUL), for text and
# binary alike: cmake -DIN=… -DOUT=… -DNAME=… -P embed.cmake
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN}; do not edit */\n#include <stddef.h>\n"
                    "const char ${NAME}[] = {${body}0x00};\nconst size_t ${NAME}_size = ${size};\n")

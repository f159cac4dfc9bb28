# Turns a text file into a NUL-terminated C array: cmake -DIN=… -DOUT=… -DNAME=… -P embed.cmake
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
file(WRITE "${OUT}" "/* generated from ${IN}; do not edit */\nconst char ${NAME}[] = {${body}0x00};\n")

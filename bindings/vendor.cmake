# Copies the engine into one flat folder for a binding to compile into itself, so that an
# installed gem or Python package needs nothing from this repository afterwards (it may be moved
# or deleted): the library's sources and headers, include/codecell.h, and the guest programs
# turned into C arrays exactly as the build does (cmake/embed.cmake, cmake/guest_languages.cmake).
#   cmake -DDEST=folder -P bindings/vendor.cmake
if(NOT DEST)
  message(FATAL_ERROR "vendor.cmake: set DEST, the folder to fill")
endif()
get_filename_component(ROOT ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)
file(REMOVE_RECURSE ${DEST})
file(MAKE_DIRECTORY ${DEST})
# The wings of src/lib (src/lib/README.md) meet in one folder: their files have names unique
# across the wings, so every include still finds its header.
file(GLOB sources ${ROOT}/src/lib/*/*.c ${ROOT}/src/lib/*/*.h)
file(COPY ${sources} ${ROOT}/include/codecell.h DESTINATION ${DEST})

# Every guest language's programs and compiled prelude; without the interpreter (or when it
# fails) an empty compiled prelude, which the guest's boot program answers by compiling the
# source, as in the build.
include(${ROOT}/cmake/guest_languages.cmake)
guest_embed_all(${DEST} ON)

# A program of the engine's built here with the system's compiler and embedded as name; without
# a compiler (or when it fails) an empty file, and the binding's cells exec a fresh interpreter
# for every sandbox instead (codecell_start).
find_program(VENDOR_CC NAMES cc gcc clang)
function(vendor_program name)
  set(out ${DEST}/${name}.bin)
  file(WRITE ${out} "")
  if(VENDOR_CC)
    execute_process(COMMAND ${VENDOR_CC} -std=gnu11 -O2 ${ARGN} -o ${out}
                    RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
    if(NOT status EQUAL 0)
      file(WRITE ${out} "")
    endif()
  endif()
  embed_file_now(${name} ${out} ${DEST})
  file(REMOVE ${out})
endfunction()
# A forked cell's fork server (src/zygote/zygote.c), loaded into the guest's interpreter.
include(${ROOT}/cmake/zygote_sources.cmake)
list(TRANSFORM CODECELL_ZYGOTE_SOURCES PREPEND ${ROOT}/)
vendor_program(zygote_so -D_GNU_SOURCE -shared -fPIC -fvisibility=hidden -Wl,-z,defs
               -I${ROOT}/src/lib/walls ${CODECELL_ZYGOTE_SOURCES})
# The forked sandboxes' init (src/zygote/init.c), static and without libc, as CMakeLists.txt
# builds it.
vendor_program(init_bin -ffreestanding -fno-stack-protector -fno-pie -fno-asynchronous-unwind-tables
               -fcf-protection=none -static -nostdlib -no-pie -Wl,-s -I${ROOT}/src/lib/walls
               ${ROOT}/src/zygote/init.c)

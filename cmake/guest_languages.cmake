# The guest languages are the folders of guest/ that hold a prelude: nothing here names one
# (src/lib/spec/runtime.h says what adding a language means). The programs of each are embedded
# into the library as C arrays (cmake/embed.cmake), named for the file and the language:
#   guest/<language>/prelude.<ext>   codecell_prelude_<language>
#   guest/<language>/boot.<ext>      codecell_boot_<language>
#   guest/<language>/probe.<ext>     codecell_probe_<language>
#   guest/<language>/loads.<ext>     codecell_loads_<language>
#   the prelude compiled             codecell_prelude_<language>_compiled
# Each prelude also goes in compiled by the interpreter the sandbox runs, which saves every start
# compiling it (~3 ms in Python, ~0.6 ms in Ruby). guest/<language>/compile.cmake sets
# COMPILE_PRELUDE to the program that does it: a list, the interpreter's absolute path and then
# its arguments, to which the prelude's path and the output's are appended (no ';' in an
# argument: it is a list). Without that file or that interpreter (and in the bindings' copy when
# it fails) the compiled array is empty, and the boot program (guest/*/boot.*) compiles the
# source at every start; it also falls back to the source when the compiled form is not this
# interpreter's (another Python magic number; Ruby refuses an instruction sequence of another
# version or platform).
#
# Included by the build (CMakeLists.txt) and by the copy of the engine the bindings carry
# (bindings/vendor.cmake). As a script it writes every array into a folder at once, the
# compiled ones empty unless COMPILE is ON (tests/fuzz/run.sh):
#   cmake -DOUT=folder [-DCOMPILE=ON] -P cmake/guest_languages.cmake
get_filename_component(GUEST_ROOT ${CMAKE_CURRENT_LIST_DIR}/.. ABSOLUTE)

# The languages, in the order of their folders' names.
function(guest_languages ret)
  if(CMAKE_SCRIPT_MODE_FILE)
    file(GLOB preludes ${GUEST_ROOT}/guest/*/prelude.*)
  else()
    # A new folder makes the build configure itself again.
    file(GLOB preludes CONFIGURE_DEPENDS ${GUEST_ROOT}/guest/*/prelude.*)
  endif()
  set(languages)
  foreach(prelude ${preludes})
    get_filename_component(folder ${prelude} DIRECTORY)
    get_filename_component(language ${folder} NAME)
    list(APPEND languages ${language})
  endforeach()
  list(REMOVE_DUPLICATES languages)
  list(SORT languages)
  set(${ret} ${languages} PARENT_SCOPE)
endfunction()

# The programs of a language as pairs, the array's name (without codecell_) and its file:
# prelude_ruby;…/guest/ruby/prelude.rb;boot_ruby;…
function(guest_programs language ret)
  set(pairs)
  foreach(role prelude boot probe loads)
    file(GLOB found ${GUEST_ROOT}/guest/${language}/${role}.*)
    list(LENGTH found n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR "guest/${language}/ needs one ${role}.<ext>, not ${n}: ${found}")
    endif()
    list(APPEND pairs ${role}_${language} ${found})
  endforeach()
  set(${ret} ${pairs} PARENT_SCOPE)
endfunction()

# guest/<language>/compile.cmake's COMPILE_PRELUDE, or nothing when the language has none or
# its interpreter is not on this host.
function(guest_compile_command language ret)
  set(COMPILE_PRELUDE)
  set(file ${GUEST_ROOT}/guest/${language}/compile.cmake)
  if(EXISTS ${file})
    include(${file})
    if(NOT CMAKE_SCRIPT_MODE_FILE)
      # The build runs the command it read: another one needs configuring again.
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${file})
    endif()
  endif()
  if(COMPILE_PRELUDE)
    list(GET COMPILE_PRELUDE 0 interpreter)
    if(NOT EXISTS ${interpreter})
      set(COMPILE_PRELUDE)
    endif()
  endif()
  set(${ret} ${COMPILE_PRELUDE} PARENT_SCOPE)
endfunction()

# The file in as the C array codecell_<name>, written now into folder/<name>.c.
function(embed_file_now name in folder)
  set(IN ${in})
  set(OUT ${folder}/${name}.c)
  set(NAME codecell_${name})
  include(${GUEST_ROOT}/cmake/embed.cmake)
endfunction()

# Every language's arrays, written now into folder; the compiled preludes compiled when compile
# is true (and the interpreter is here), else empty.
function(guest_embed_all folder compile)
  guest_languages(languages)
  foreach(language ${languages})
    guest_programs(${language} pairs)
    list(GET pairs 1 prelude)
    while(pairs)
      list(POP_FRONT pairs name file)
      embed_file_now(${name} ${file} ${folder})
    endwhile()
    set(command)
    if(compile)
      guest_compile_command(${language} command)
    endif()
    set(out ${folder}/prelude_${language}.compiled)
    file(WRITE ${out} "")
    if(command)
      execute_process(COMMAND ${command} ${prelude} ${out} RESULT_VARIABLE status)
      if(NOT status EQUAL 0)
        file(WRITE ${out} "")
      endif()
    endif()
    embed_file_now(prelude_${language}_compiled ${out} ${folder})
    file(REMOVE ${out})
  endforeach()
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT OUT)
    message(FATAL_ERROR "guest_languages.cmake: set OUT, the folder to write the arrays into")
  endif()
  file(MAKE_DIRECTORY ${OUT})
  guest_embed_all(${OUT} "${COMPILE}")
endif()

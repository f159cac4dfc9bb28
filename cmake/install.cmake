# `make install` / `cmake --install`: the command, the library (shared, with its soname, and
# static), the header, codecell.pc, the man pages, bash completion and the systemd units.
# PREFIX and DESTDIR are honoured: the files that name a path (codecell.pc, the units) are
# written at install time, from the prefix the install uses (cmake --install --prefix may
# differ from the one configured).
install(TARGETS codecell RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS codecell_shared LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS codecell_static ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES include/codecell.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES man/codecell.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES man/codecell.json.5 DESTINATION ${CMAKE_INSTALL_MANDIR}/man5)
install(FILES man/libcodecell.3 DESTINATION ${CMAKE_INSTALL_MANDIR}/man3)
install(FILES packaging/bash-completion/codecell
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)

# Written by the install step itself. ${CMAKE_INSTALL_PREFIX} in the code below is the
# install-time prefix; file(INSTALL) adds DESTDIR to where a file goes, never to what it says.
set(CODECELL_INSTALL_SCRIPT ${CMAKE_BINARY_DIR}/install_generated.cmake)
file(WRITE ${CODECELL_INSTALL_SCRIPT} "
function(codecell_path ret dir)
  if(IS_ABSOLUTE \"\${dir}\")
    set(\${ret} \"\${dir}\" PARENT_SCOPE)
  else()
    set(\${ret} \"\${CMAKE_INSTALL_PREFIX}/\${dir}\" PARENT_SCOPE)
  endif()
endfunction()
set(PROJECT_VERSION \"${PROJECT_VERSION}\")
set(PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
codecell_path(LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
codecell_path(INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
codecell_path(CODECELL_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
# systemd reads units under /usr/lib, /usr/local/lib and /etc; for another prefix they still go
# to PREFIX/lib/systemd/system, to be linked or copied from there.
set(units \"\${CMAKE_INSTALL_PREFIX}/lib/systemd/system\")
configure_file(\"${CMAKE_SOURCE_DIR}/cmake/codecell.pc.in\"
               \"${CMAKE_BINARY_DIR}/install/codecell.pc\" @ONLY)
foreach(unit codecell.service codecell.socket codecell@.service)
  configure_file(\"${CMAKE_SOURCE_DIR}/packaging/systemd/\${unit}.in\"
                 \"${CMAKE_BINARY_DIR}/install/\${unit}\" @ONLY)
endforeach()
file(INSTALL \"${CMAKE_BINARY_DIR}/install/codecell.pc\"
     DESTINATION \"\${LIBDIR}/pkgconfig\")
file(INSTALL \"${CMAKE_BINARY_DIR}/install/codecell.service\"
             \"${CMAKE_BINARY_DIR}/install/codecell.socket\"
             \"${CMAKE_BINARY_DIR}/install/codecell@.service\"
     DESTINATION \"\${units}\")
")
install(SCRIPT ${CODECELL_INSTALL_SCRIPT})

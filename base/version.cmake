# Writes base/version.h (cmake -P, at every build): the project and LLVM
# versions given by the build, and `git describe` of the sources now, so that
# the header is never older than the commit it was built from. configure_file
# leaves the file untouched when nothing changed, so nothing rebuilds then.
#   -DSOURCE_DIR=... -DOUTPUT=... -DTESSERA_PROJECT_VERSION=... -DTESSERA_LLVM_VERSION=...
find_package(Git QUIET)
set(TESSERA_GIT_DESCRIBE unknown)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} describe --always --dirty
                  WORKING_DIRECTORY ${SOURCE_DIR}
                  OUTPUT_VARIABLE describe OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE failed ERROR_QUIET)
  if(NOT failed AND describe)
    set(TESSERA_GIT_DESCRIBE ${describe})
  endif()
endif()
configure_file(${SOURCE_DIR}/base/version.h.in ${OUTPUT} @ONLY)

# Writes OUTPUT from INPUT (gateway/core/version_info.cc.in) with SLUICE_VERSION and the git
# commit of SOURCE_DIR, empty when SOURCE_DIR is no git work tree or git is missing (a build
# from a source archive or a Docker context without .git must not fail). Run at every build
# (cmake -P); OUTPUT is replaced only when its text changes, so nothing recompiles otherwise.
execute_process(
    COMMAND git -C "${SOURCE_DIR}" rev-parse --short=12 HEAD
    OUTPUT_VARIABLE SLUICE_GIT_COMMIT
    OUTPUT_STRIP_TRAILING_WHITESPACE
    ERROR_QUIET
    RESULT_VARIABLE git_result)
if(NOT git_result EQUAL 0 OR NOT SLUICE_GIT_COMMIT MATCHES "^[0-9a-f]+$")
    set(SLUICE_GIT_COMMIT "")
endif()
configure_file("${INPUT}" "${OUTPUT}.new" @ONLY)
file(COPY_FILE "${OUTPUT}.new" "${OUTPUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUTPUT}.new")

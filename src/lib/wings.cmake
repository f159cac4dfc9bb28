# The engine's wings (src/lib/README.md), bottom to top: one object library each, which sees
# include/, its own folder and, through the wings it uses, theirs. An include that runs upward
# (a wing's file including a header of a wing above it, or of one it does not use) does not
# compile; tests/integration/test_layout.py checks the same from the include lines and refuses
# a path that would step around the folders. Included from the top CMakeLists.txt, not added as
# a subdirectory: the embedded guest programs are custom commands of the top directory, which
# only its own targets may use.
set(WING_DIR ${CMAKE_SOURCE_DIR}/src/lib)

# codecell_wing(NAME USES wing... SOURCES file...): sources relative to src/lib/NAME, or
# absolute (generated ones).
function(codecell_wing name)
  cmake_parse_arguments(W "" "" "USES;SOURCES" ${ARGN})
  set(sources)
  foreach(s ${W_SOURCES})
    if(IS_ABSOLUTE ${s})
      list(APPEND sources ${s})
    else()
      list(APPEND sources ${WING_DIR}/${name}/${s})
    endif()
  endforeach()
  add_library(engine_${name} OBJECT ${sources})
  set_target_properties(engine_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON
                        C_VISIBILITY_PRESET hidden)
  target_include_directories(engine_${name} PUBLIC ${CMAKE_SOURCE_DIR}/include ${WING_DIR}/${name})
  target_compile_definitions(engine_${name} PRIVATE CODECELL_VERSION="${PROJECT_VERSION}")
  target_link_libraries(engine_${name} PUBLIC PkgConfig::JANSSON)
  foreach(used ${W_USES})
    target_link_libraries(engine_${name} PUBLIC engine_${used})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY CODECELL_WINGS ${name})
endfunction()

# Plumbing every part shares: errors, clocks and deadlines, files, UTF-8, cleanup, the guest
# protocol's frames, JSON files, base64, host programs and command calls, libraries loaded at run
# time.
codecell_wing(base SOURCES
  error.c util.c deadline.c frame.c json_file.c base64.c host_spawn.c command_tool.c pipe_write.c
  dynlib.c proc_stat.c version.c)
# The engine's egress proxy of a sandbox with a network policy: the policy, names and
# addresses checked, the request heads and TLS hellos read, the relay (issue 31).
codecell_wing(egress USES base SOURCES
  egress_policy.c egress_host.c egress_addr.c egress_local.c egress_sni.c egress_http.c
  egress_lookup.c egress_answer.c openssl_api.c egress_tls.c egress_conn.c egress_terminate.c
  egress.c)
# What a cell is before anything runs: its configuration and limits, the guest languages (with
# their embedded programs, GUEST_SOURCES of CMakeLists.txt), the interpreters as probed on the
# host, the rules of mounts.
codecell_wing(spec USES base egress SOURCES
  config.c config_network.c runtime.c interpreter.c mount_rules.c ${GUEST_SOURCES})
# What goes into a run and what comes out: input, cancel, output, images, the result and the
# model's view of it.
codecell_wing(results USES base SOURCES
  run_input.c cancel.c output.c images.c display.c out_files.c result.c result_files.c result_network.c
  model_view.c error_hint.c)
# The client of upstream MCP servers, over stdio and HTTP (libcurl loaded at run time).
codecell_wing(mcp_client USES base SOURCES
  upstream.c upstream_stdio.c upstream_http.c upstream_result.c curl_api.c exact_integers.c)
target_include_directories(engine_mcp_client PRIVATE ${CURL_INCLUDE_DIRS})
# A cell's host tools: the table, their signatures, the calls of SB.call, the guest's names.
codecell_wing(tools USES spec results mcp_client SOURCES
  tools.c tool_signatures.c tool_descriptions.c rpc.c call_record.c approval.c guest_names.c
  json_schema_check.c)
# The walls of a sandbox and what the host gives of them: namespaces, mounts, seccomp, Landlock,
# capabilities, the one entry every guest takes, cgroups, CPU time, the zygote's side of forked
# sandboxes.
codecell_wing(walls USES spec SOURCES
  sandbox.c sandbox_entry.c seccomp_filter.c landlock.c capabilities.c netns.c proxy_listener.c fd_passing.c
  cgroup.c cgroup_v1.c cgroup_v2.c cgroup_delegate.c
  mount_plan.c mount_roots.c idmap.c cpu_time.c zygote.c zygote_walls.c check.c check_causes.c
  ${CMAKE_BINARY_DIR}/zygote_so.c ${CMAKE_BINARY_DIR}/init_bin.c)
target_link_libraries(engine_walls PUBLIC PkgConfig::SECCOMP)
# A caller's function in a forked child behind a sandbox's walls (codecell_jail_*).
codecell_wing(jail USES walls SOURCES
  jail.c jail_child.c jail_cgroup.c jail_cgroup_stock.c jail_reaper.c jail_wait.c jail_netns.c
  jail_idmap.c jail_safe_path.c jail_nested.c jail_keep_open.c jail_shared_maps.c
  jail_keeper_ids.c)
# The cell and its runs: the plan, standbys and their pool, the pump, executions, sessions,
# disposal, the description.
codecell_wing(run USES tools walls egress SOURCES
  cell_plan.c standby.c pump.c pool.c disposal.c execution.c run_network.c session.c journal.c journal_codec.c session_store_dir.c session_restore.c
  description.c
  library_check.c cell.c)
# Configuration files: the cells of a file, its tools and its MCP servers, which make cells
# and add to them.
codecell_wing(files USES run SOURCES
  config_file.c tools_file.c cellset.c config_mcp.c upstream_tools.c)

get_property(CODECELL_WINGS GLOBAL PROPERTY CODECELL_WINGS)
set(ENGINE_OBJECTS)
set(ENGINE_INCLUDE_DIRS)
foreach(wing ${CODECELL_WINGS})
  list(APPEND ENGINE_OBJECTS $<TARGET_OBJECTS:engine_${wing}>)
  list(APPEND ENGINE_INCLUDE_DIRS ${WING_DIR}/${wing})
endforeach()

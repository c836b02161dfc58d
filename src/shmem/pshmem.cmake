# pshmem.cmake: the OpenSHMEM profiling interface (specification annex: every routine also callable as pshmem_<name>)
# from ONE source, the routine declarations of the public headers include/shmem*.h.
#
#   cmake -DDECLS=<include/shmem.h preprocessed as C, line markers kept> -DINCLUDE_DIR=<include dir>
#         -DOUT_DIR=<dir> -P pshmem.cmake
#
# Takes every function declaration `RET NAME(PARAMS)` whose line markers place it in INCLUDE_DIR/shmem*.h (macros,
# types, constants and the extern objects behind SHMEM_TEAM_WORLD etc. are not functions and are left out; the C11
# generic names are macros and are left out). The profiling name is "p" NAME: shmem_X -> pshmem_X, and the deprecated
# start_pes -> pstart_pes, _my_pe -> p_my_pe, shmalloc -> pshmalloc. Writes to OUT_DIR:
#  - pshmem_weak.h     `#pragma weak NAME` each; force-included into libtether_shmem's sources: the definitions are weak
#  - pshmem_twins.ld   `pNAME = NAME;` each; an implicit linker script of libtether_shmem: the strong pshmem_ twins,
#                      at the same addresses (a tool's own shmem_X wins over the weak one; its pshmem_X call reaches
#                      the library's code)
#  - pshmem_names.txt  NAME, one a line (tests/shmem/pshmem_check.sh)
#  - pshmem.h          the declarations under the profiling names; include/pshmem.h is a copy of it
#                      (test shmem_pshmem_header fails when they differ)
# A declaration this script does not understand (a parameter list with parentheses, an attribute) stops it with an
# error naming the declaration, rather than leaving a routine without its twin.
cmake_minimum_required(VERSION 3.16)
foreach(v DECLS INCLUDE_DIR OUT_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "pshmem.cmake: -D${v}=... is required")
  endif()
endforeach()
get_filename_component(INCLUDE_DIR "${INCLUDE_DIR}" REALPATH)

file(READ "${DECLS}" text)
# CMake lists split on ';' and group on brackets: park those characters while the text is handled as a list.
string(REPLACE ";" "@SEMI@" text "${text}")
string(REPLACE "[" "@LB@" text "${text}")
string(REPLACE "]" "@RB@" text "${text}")
string(REPLACE "\\" "@BS@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

# The text of the public headers, each header's part opened by @FILE:<name>@.
set(body "")
set(keep OFF)
foreach(line IN LISTS lines)
  if(line MATCHES "^# *[0-9]+ \"([^\"]*)\"")
    get_filename_component(dir "${CMAKE_MATCH_1}" DIRECTORY)
    get_filename_component(name "${CMAKE_MATCH_1}" NAME)
    set(keep OFF)
    if(dir AND name MATCHES "^shmem[a-z_]*\\.h$")
      get_filename_component(dir "${dir}" REALPATH)
      if(dir STREQUAL INCLUDE_DIR)
        set(keep ON)
        string(APPEND body " @FILE:${name}@ ")
      endif()
    endif()
  elseif(keep AND NOT line MATCHES "^[ \t]*#")
    string(APPEND body " ${line}")
  endif()
endforeach()

# Drop brace groups (struct bodies), innermost first, then split into declarations.
set(prev "")
while(NOT prev STREQUAL body)
  set(prev "${body}")
  string(REGEX REPLACE "{[^{}]*}" " " body "${body}")
endwhile()
string(REGEX REPLACE "[ \t\r]+" " " body "${body}")
string(REPLACE "@SEMI@" ";" decls "${body}")

set(names "")
set(weak "")
set(twins "")
set(protos "")
set(file "")
foreach(decl IN LISTS decls)
  # Header markers open the declaration that follows them.
  while(decl MATCHES "@FILE:([a-z_.]+)@")
    set(file "${CMAKE_MATCH_1}")
    string(REPLACE "@FILE:${file}@" "" decl "${decl}")
  endwhile()
  string(STRIP "${decl}" decl)
  if(decl STREQUAL "" OR decl MATCHES "^typedef " OR NOT decl MATCHES "\\(")
    continue()  # types, forward declarations, objects
  endif()
  if(NOT decl MATCHES "^([^()]*[^A-Za-z0-9_()])([A-Za-z_][A-Za-z0-9_]*) ?\\(([^()]*)\\)$")
    string(REPLACE "@LB@" "[" decl "${decl}")
    string(REPLACE "@RB@" "]" decl "${decl}")
    message(FATAL_ERROR "pshmem.cmake: ${file}: cannot read the declaration '${decl}' (expected RET NAME(PARAMS) "
                        "without parentheses in PARAMS): extend src/shmem/pshmem.cmake")
  endif()
  set(ret "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
  set(params "${CMAKE_MATCH_3}")
  if(name IN_LIST names)
    continue()  # declared again in another header
  endif()
  list(APPEND names "${name}")
  # One spelling whatever the compiler's spacing: "T* name", "(a, b)".
  set(proto "${ret}p${name}(${params})")
  string(REGEX REPLACE " *\\* *" "*" proto "${proto}")
  string(REGEX REPLACE "\\*([A-Za-z_(])" "* \\1" proto "${proto}")
  string(REGEX REPLACE " *, *" ", " proto "${proto}")
  string(REGEX REPLACE "\\( +" "(" proto "${proto}")
  string(REGEX REPLACE " +\\)" ")" proto "${proto}")
  string(STRIP "${proto}" proto)
  # The complex types are the one spelling that differs between C and C++: keep shmem_coll.h's names for them.
  string(REPLACE "double _Complex" "SHMEM_COMPLEXD_T_" proto "${proto}")
  string(REPLACE "float _Complex" "SHMEM_COMPLEXF_T_" proto "${proto}")
  if(proto MATCHES "_Complex")
    message(FATAL_ERROR "pshmem.cmake: ${file}: no C/C++ spelling known for the complex type in '${proto}'")
  endif()
  if(NOT file STREQUAL protos_file)
    string(APPEND protos "\n/* ${file} */\n")
    set(protos_file "${file}")
  endif()
  string(APPEND protos "${proto};\n")
  string(APPEND weak "#pragma weak ${name}\n")
  string(APPEND twins "p${name} = ${name};\n")
endforeach()
list(LENGTH names count)
if(count EQUAL 0)
  message(FATAL_ERROR "pshmem.cmake: no routine declarations from ${INCLUDE_DIR}/shmem*.h in ${DECLS}")
endif()
string(REPLACE "@LB@" "[" protos "${protos}")
string(REPLACE "@RB@" "]" protos "${protos}")
string(REPLACE "@BS@" "\\" protos "${protos}")

file(MAKE_DIRECTORY "${OUT_DIR}")
file(WRITE "${OUT_DIR}/pshmem_weak.h"
     "/* Generated by src/shmem/pshmem.cmake: libtether_shmem's definitions of the ${count} routines are weak. */\n"
     "${weak}")
file(WRITE "${OUT_DIR}/pshmem_twins.ld"
     "/* Generated by src/shmem/pshmem.cmake: the strong pshmem_ twins of the ${count} weak routines. */\n${twins}")
string(REPLACE ";" "\n" names_text "${names}")
file(WRITE "${OUT_DIR}/pshmem_names.txt" "${names_text}\n")
file(WRITE "${OUT_DIR}/pshmem.h" "\
/* OpenSHMEM profiling interface on tether: every routine of shmem.h under its profiling name, p<name>
 * (pshmem_<X> for shmem_<X>; pstart_pes, p_my_pe, p_num_pes, pshmalloc, pshmemalign, pshrealloc, pshfree for the
 * deprecated names). A tool defines its own shmem_<X> (libtether_shmem's is a weak symbol) and calls pshmem_<X>, which
 * always reaches the library. The generic names (C11 _Generic, C++ overloads) have no profiling form: call the typed
 * routine. Include with or without shmem.h, in either order.
 *
 * GENERATED by src/shmem/pshmem.cmake from include/shmem*.h (${count} routines); do not edit. After changing a
 * routine's declaration, copy <build>/src/shmem/pshmem/pshmem.h here (test shmem_pshmem_header checks it).
 */
#ifndef PSHMEM_H
#define PSHMEM_H

#include \"shmem.h\"

#ifdef __cplusplus
extern \"C\" {
#endif
${protos}
#ifdef __cplusplus
} /* extern \"C\" */
#endif

#endif /* PSHMEM_H */
")

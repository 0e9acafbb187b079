# dagrad's library layers (see CMakeLists.txt): one static library each,
# linked bottom-up, plus the umbrella `dagrad`.

# Headers installed with the library (tools/cmake/install.cmake).
# A folder is a layer or one subsystem of one; headers under */internal/
# are the library's own and are not installed.
set(DAGRAD_FOLDERS_ENGINE engine engine/plan engine/io engine/dot engine/view engine/device)
set(DAGRAD_FOLDERS_OPS ops ops/math ops/cpu)
set(DAGRAD_FOLDERS_MODELS models models/nn models/gpt models/gpt2 models/toy models/plot)
set(public_header_globs "")
foreach(folder ${DAGRAD_FOLDERS_ENGINE} ${DAGRAD_FOLDERS_OPS} ops/autodiff ${DAGRAD_FOLDERS_MODELS})
  list(APPEND public_header_globs ${PROJECT_SOURCE_DIR}/${folder}/*.h)
endforeach()
file(GLOB DAGRAD_HEADERS CONFIGURE_DEPENDS ${public_header_globs})
# The CUDA device's public header has no CUDA types (every build has it);
# the rest of engine/cuda/ and ops/cuda/ is internal.
list(APPEND DAGRAD_HEADERS ${PROJECT_SOURCE_DIR}/engine/cuda/cuda_device.h)

# Each layer compiles against a tree of its own headers, not the source
# tree: build/layers/<layer>/ holds links to them at their paths (engine/
# graph.h, ...), made when CMake configures. A layer sees its own tree and,
# through the layers it links, theirs; so an include of a higher layer's
# header fails to compile. The arguments after `target` are globs relative
# to the source root.
function(dagrad_stage_headers target)
  set(stage ${PROJECT_BINARY_DIR}/layers/${target})
  file(REMOVE_RECURSE ${stage})
  list(TRANSFORM ARGN PREPEND ${PROJECT_SOURCE_DIR}/ OUTPUT_VARIABLE globs)
  file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR} ${globs})
  foreach(header ${headers})
    get_filename_component(dir ${stage}/${header} DIRECTORY)
    file(MAKE_DIRECTORY ${dir})
    file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${header} ${stage}/${header} SYMBOLIC)
  endforeach()
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${stage}>)
endfunction()

# dagrad_add_layer(name sources...) makes the static library dagrad_<name>
# with the flags every layer is compiled with.
function(dagrad_add_layer name)
  set(target dagrad_${name})
  add_library(${target} STATIC ${ARGN})
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra
                         -Wno-unused-parameter -Wno-missing-field-initializers>)
  # dagrad never reads errno after a math call; without it, sqrt is one
  # vector instruction and loops calling it vectorise (results are
  # unchanged: this is not -ffast-math).
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-fno-math-errno>)
  if(DAGRAD_NATIVE)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  endif()
  target_link_libraries(${target} PRIVATE BLIS::BLIS OpenMP::OpenMP_CXX
                        nlohmann_json::nlohmann_json Threads::Threads)
endfunction()

# dagrad_layer_files(out ext folders...) lists the files of one extension
# in the folders (not below them).
function(dagrad_layer_files out ext)
  list(TRANSFORM ARGN APPEND "/*.${ext}" OUTPUT_VARIABLE globs)
  list(TRANSFORM globs PREPEND ${PROJECT_SOURCE_DIR}/)
  file(GLOB files CONFIGURE_DEPENDS ${globs})
  set(${out} ${files} PARENT_SCOPE)
endfunction()

dagrad_layer_files(engine_sources cc ${DAGRAD_FOLDERS_ENGINE})
dagrad_add_layer(engine ${engine_sources})
list(TRANSFORM DAGRAD_FOLDERS_ENGINE APPEND "/*.h" OUTPUT_VARIABLE engine_headers)
dagrad_stage_headers(dagrad_engine ${engine_headers} engine/plan/internal/*.h engine/view/internal/*.h
                      engine/cuda/*.h)
target_link_libraries(dagrad_engine
  PUBLIC absl::status absl::statusor absl::strings absl::str_format
         absl::flat_hash_map absl::inlined_vector absl::span absl::base)
target_compile_definitions(dagrad_engine PRIVATE DAGRAD_DOT_PROGRAM="${DAGRAD_DOT_PROGRAM}")
dagrad_add_cuda_sources(dagrad_engine engine/cuda)
if(DAGRAD_SANITIZE)
  # An instrumented static library needs the sanitizer runtimes wherever it
  # is linked, installed consumers included.
  target_link_options(dagrad_engine INTERFACE -fsanitize=address,undefined)
endif()
if(DAGRAD_FUZZ)
  target_link_options(dagrad_engine INTERFACE -fsanitize=fuzzer-no-link)
endif()

# The MPI communicator, over the engine (optional: tools/cmake/mpi.cmake).
# MPI is private to it.
if(DAGRAD_HAVE_MPI)
  dagrad_add_layer(mpi ${PROJECT_SOURCE_DIR}/engine/mpi/mpi_communicator.cc)
  dagrad_stage_headers(dagrad_mpi engine/mpi/*.h)
  target_link_libraries(dagrad_mpi PUBLIC dagrad_engine PRIVATE MPI::MPI_CXX)
  list(APPEND DAGRAD_HEADERS ${PROJECT_SOURCE_DIR}/engine/mpi/mpi_communicator.h)
endif()

dagrad_layer_files(ops_sources cc ${DAGRAD_FOLDERS_OPS})
dagrad_add_layer(ops ${ops_sources})
list(TRANSFORM DAGRAD_FOLDERS_OPS APPEND "/*.h" OUTPUT_VARIABLE ops_headers)
dagrad_stage_headers(dagrad_ops ${ops_headers} ops/internal/*.h ops/cpu/internal/*.h ops/cpu/kernels/*.h ops/cuda/*.h ops/cuda/*.cuh)
target_link_libraries(dagrad_ops PUBLIC dagrad_engine)
include(tools/cmake/isa_kernels.cmake)
dagrad_add_isa_kernels(dagrad_ops)
# The ops register themselves when the program starts (ops/registry.h), and
# so do their CUDA kernels (ops/cuda/registry.h); nothing names an op's
# file, so the ops' archives are linked whole, here and in installed
# consumers. `ops_layer` is the ops layer as the layers above link it:
# dagrad_ops, and dagrad_ops_cuda with the CUDA backend.
# (The installed name is spelled out: CMake 3.25 does not add the export's
# namespace inside $<LINK_LIBRARY>.)
set(ops_layer "$<BUILD_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,dagrad_ops>>"
    "$<INSTALL_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,dagrad::dagrad_ops>>")
if(DAGRAD_HAVE_CUDA)
  dagrad_add_layer(ops_cuda)
  target_link_libraries(dagrad_ops_cuda PUBLIC ${ops_layer})
  dagrad_add_cuda_sources(dagrad_ops_cuda ops/cuda)
  set(ops_layer "$<BUILD_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,dagrad_ops_cuda>>"
      "$<INSTALL_INTERFACE:$<LINK_LIBRARY:WHOLE_ARCHIVE,dagrad::dagrad_ops_cuda>>" ${ops_layer})
endif()

dagrad_layer_files(autodiff_sources cc ops/autodiff)
dagrad_add_layer(autodiff ${autodiff_sources})
dagrad_stage_headers(dagrad_autodiff ops/autodiff/*.h)
target_link_libraries(dagrad_autodiff PUBLIC ${ops_layer})

# ONNX import and export, over the ops (optional: tools/cmake/onnx.cmake).
# The ONNX and protobuf libraries are private to it.
dagrad_layer_files(onnx_sources cc ops/onnx)
if(DAGRAD_HAVE_ONNX AND onnx_sources)
  dagrad_add_layer(onnx ${onnx_sources})
  dagrad_stage_headers(dagrad_onnx ops/onnx/*.h)
  target_link_libraries(dagrad_onnx PUBLIC ${ops_layer} PRIVATE onnx onnx_proto)
endif()

dagrad_layer_files(models_sources cc ${DAGRAD_FOLDERS_MODELS})
dagrad_add_layer(models ${models_sources})
list(TRANSFORM DAGRAD_FOLDERS_MODELS APPEND "/*.h" OUTPUT_VARIABLE models_headers)
dagrad_stage_headers(dagrad_models ${models_headers})
target_link_libraries(dagrad_models PUBLIC dagrad_autodiff PRIVATE ICU::uc)

add_library(dagrad INTERFACE)
add_library(dagrad::dagrad ALIAS dagrad)
target_link_libraries(dagrad INTERFACE dagrad_models)
if(TARGET dagrad_onnx)
  # tools/ and the tests test DAGRAD_HAVE_ONNX before they use ops/onnx/.
  target_link_libraries(dagrad INTERFACE dagrad_onnx)
  target_compile_definitions(dagrad INTERFACE DAGRAD_HAVE_ONNX=1)
endif()
if(TARGET dagrad_mpi)
  # tools/ and the tests test DAGRAD_HAVE_MPI before they use engine/mpi/.
  target_link_libraries(dagrad INTERFACE dagrad_mpi)
  target_compile_definitions(dagrad INTERFACE DAGRAD_HAVE_MPI=1)
endif()
# tools/ and the tests include their own headers from the source tree.
target_include_directories(dagrad INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}>)
set(DAGRAD_LAYERS dagrad_engine dagrad_ops dagrad_autodiff dagrad_models)
if(DAGRAD_HAVE_CUDA)
  list(APPEND DAGRAD_LAYERS dagrad_ops_cuda)
endif()
if(TARGET dagrad_onnx)
  list(APPEND DAGRAD_LAYERS dagrad_onnx)
endif()
if(TARGET dagrad_mpi)
  list(APPEND DAGRAD_LAYERS dagrad_mpi)
endif()

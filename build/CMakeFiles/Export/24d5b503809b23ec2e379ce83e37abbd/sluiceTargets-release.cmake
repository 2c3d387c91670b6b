#----------------------------------------------------------------
# Generated CMake target import file for configuration "Release".
#----------------------------------------------------------------

# Commands may need to know the format version.
set(CMAKE_IMPORT_FILE_VERSION 1)

# Import target "sluice::core" for configuration "Release"
set_property(TARGET sluice::core APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(sluice::core PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libsluice_core.a"
  )

list(APPEND _cmake_import_check_targets sluice::core )
list(APPEND _cmake_import_check_files_for_sluice::core "${_IMPORT_PREFIX}/lib/libsluice_core.a" )

# Import target "sluice::proto" for configuration "Release"
set_property(TARGET sluice::proto APPEND PROPERTY IMPORTED_CONFIGURATIONS RELEASE)
set_target_properties(sluice::proto PROPERTIES
  IMPORTED_LINK_INTERFACE_LANGUAGES_RELEASE "CXX"
  IMPORTED_LOCATION_RELEASE "${_IMPORT_PREFIX}/lib/libsluice_proto.a"
  )

list(APPEND _cmake_import_check_targets sluice::proto )
list(APPEND _cmake_import_check_files_for_sluice::proto "${_IMPORT_PREFIX}/lib/libsluice_proto.a" )

# Commands beyond this point should not need to know the version.
set(CMAKE_IMPORT_FILE_VERSION)

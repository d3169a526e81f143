#pragma once

/// remat's version; matches `project(version:)` in the top-level meson.build.
#define REMAT_VERSION_MAJOR 0
#define REMAT_VERSION_MINOR 1
#define REMAT_VERSION_PATCH 0
#define REMAT_VERSION (REMAT_VERSION_MAJOR * 10000 + REMAT_VERSION_MINOR * 100 + REMAT_VERSION_PATCH)
#define REMAT_VERSION_STRING "0.1.0"

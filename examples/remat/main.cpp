// remat: plan and inspect gradient checkpointing for computation graphs.

#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
  CLI::App app{"remat: plans gradient checkpointing for a computation graph and tells, in bytes, what it saves.\n"
               "Graph files: remat JSON (docs/graph-format.md) or Kusumoto et al.'s text IR."};
  app.set_version_flag("--version", REMAT_VERSION_STRING);
  app.require_subcommand(1);
  remat::cli::add_info_command(app);
  remat::cli::add_plan_command(app);
  remat::cli::add_simulate_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "remat: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

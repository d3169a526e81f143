// remat: plan and inspect gradient checkpointing for computation graphs.

#include <cstdio>
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
  remat::cli::add_pareto_command(app);
  remat::cli::add_explain_command(app);
  remat::cli::add_zoo_command(app);
  remat::cli::add_gen_command(app);
  try {
    app.parse(argc, argv);
    // Output lost to a full disk or a closed pipe is a failed command.
    if (std::fflush(stdout) != 0 || std::ferror(stdout) || !std::cout)
      throw remat::error("cannot write to standard output");
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // Bad arguments get one line, like every other error.
    std::cerr << "remat: error: " << e.what() << " (see --help)\n";
    return e.get_exit_code();
  } catch (const std::exception& e) {
    std::cerr << "remat: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}

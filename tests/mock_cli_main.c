/* `jethost mock` on its own, for the tests, until host/cmd/cli.c dispatches to
 * jet_mock_cli_main(): `mock-cli mock ARGS...` runs as `jethost mock ARGS...`. */
#include "mock_cli.h"

#include <string.h>

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "mock") == 0)
        return jet_mock_cli_main(argc - 1, argv + 1);
    return 2;
}

/* `jethost mock`: the mock host on the command line (docs/mock.md). */
#ifndef JET_MOCK_CLI_H
#define JET_MOCK_CLI_H

/* argv[0] is "mock".  Reads JSON lines on stdin, writes one JSON line per
 * settlement on stdout.  Returns the exit code: 0 every message settled and
 * no rule was broken; 1 the plugin broke a strict rule; 2 a bad command line
 * or input line; 3 the plugin could not be loaded, its options do not
 * validate, or its init() failed. */
int jet_mock_cli_main(int argc, char **argv);

#endif

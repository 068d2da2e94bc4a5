/* jethost: runs message-handler plugins on NATS JetStream consumers. */
#include "cli.h"

int main(int argc, char **argv)
{
    return jet_cli_main(argc, argv);
}

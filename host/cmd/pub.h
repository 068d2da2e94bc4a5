/* `jethost pub`: publish a message to JetStream and print the pub-ack. */
#ifndef JET_PUB_H
#define JET_PUB_H

/* Returns the process exit code (exit_codes.h). */
int jet_pub_main(int argc, char **argv);

#endif

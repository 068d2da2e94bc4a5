/* The function table the host passes to every plugin. */
#ifndef JET_HOST_API_H
#define JET_HOST_API_H

#include <jethost/plugin.h>

/* The process-wide table; static storage. */
const jet_host_api *jet_host_api_table(void);

#endif

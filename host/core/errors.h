/* The host's GError domain. */
#ifndef JET_ERRORS_H
#define JET_ERRORS_H

#include <glib.h>

#define JET_ERROR (jet_error_quark())
GQuark jet_error_quark(void);

typedef enum {
    JET_ERROR_INVALID,      /* bad input: config, option, argument */
    JET_ERROR_PLUGIN,       /* a plugin could not be loaded or refused to start */
    JET_ERROR_PERMISSION,   /* a file is not safe to trust */
    JET_ERROR_SERVER,       /* the NATS server refused or did not answer */
    JET_ERROR_FAILED,       /* anything else */
} JetError;

#endif

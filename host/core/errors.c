#include "errors.h"

G_DEFINE_QUARK(jet-error-quark, jet_error)

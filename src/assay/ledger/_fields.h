/* The field names the compiled modules read and set on drafts and entries (entry.py),
 * interned once when each module loads. Included by _canonical.c and _seal.c, which are
 * built apart: each has its own copy of these. */

#ifndef ASSAY_LEDGER_FIELDS_H
#define ASSAY_LEDGER_FIELDS_H

#include <Python.h>

/* A draft's fields, which an entry shares (_run is the run's JSON, _head and _rest the
 * pieces of the sealed entry's canonical JSON around it). */
static PyObject *name_kind, *name_timestamp, *name_body, *name_session, *name_run,
    *name_transition, *name_head, *name_run_json, *name_rest;

typedef struct {
    PyObject **slot;
    const char *text;
} FieldName;

#define DRAFT_FIELD_NAMES                                                                   \
    {&name_kind, "kind"}, {&name_timestamp, "timestamp"}, {&name_body, "body"},             \
        {&name_session, "session"}, {&name_run, "run"}, {&name_transition, "transition"},   \
        {&name_head, "_head"}, {&name_run_json, "_run"}, {&name_rest, "_rest"}

/* Intern each name into its slot; -1 with an exception set if one cannot be. */
static int
intern_field_names(const FieldName *names, size_t count)
{
    for (size_t at = 0; at < count; at++) {
        *names[at].slot = PyUnicode_InternFromString(names[at].text);
        if (*names[at].slot == NULL) {
            return -1;
        }
    }
    return 0;
}

#endif

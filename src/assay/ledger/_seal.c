/* Sealing ledger entries and hashing Merkle nodes, in C, with OpenSSL's SHA-256.
 *
 * seal_all(entry_type, drafts, head_seq, head_hash) gives each draft its place after the
 * head, exactly as entry.py describes it: the hash is the SHA-256 of the entry's RFC 8785
 * JSON without the hash member, the canonical form is that JSON with it, and the Merkle leaf
 * hash is SHA-256(0x00 || canonical). It answers instances of entry_type (a slots class)
 * made without running its __init__, every field set. node_hashes(level, start, stop) hashes
 * each 64-byte pair of level[start:stop] as an interior node, SHA-256(0x01 || pair).
 *
 * Both exist because hashlib costs about 0.9 us a call on top of the hashing itself (1.3 KB
 * hash in 0.7 us), and sealing, like taking an entry into the tree, runs for every entry
 * under the GIL. Verification (entry.parse_entry, merkle.verify_*) keeps to hashlib, so
 * what is sealed here is checked by independent code.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <openssl/evp.h>
#include <string.h>

#include "_fields.h"

#define DIGEST 32

/* The members around a draft's pieces, in RFC 8785 key order (entry.py's seal). */
#define KIND ",\"kind\":\""
#define PREV_HASH "\",\"prev_hash\":\""
#define RUN "\",\"run\":"
#define SEQ ",\"seq\":"
#define HASH ",\"hash\":\""
#define QUOTE "\""
#define LITERAL(text) ((Py_ssize_t)sizeof(text) - 1)

static EVP_MD *sha256 = NULL;

/* An entry's own fields, beside the draft's (_fields.h), interned once. */
static PyObject *name_seq, *name_prev_hash, *name_hash, *name_canonical, *name_leaf;

static int
digest(const unsigned char *data, size_t length, unsigned char *out)
{
    if (!EVP_Digest(data, length, out, NULL, sha256, NULL)) {
        PyErr_SetString(PyExc_RuntimeError, "OpenSSL could not compute a SHA-256 digest");
        return -1;
    }
    return 0;
}

static void
to_hex(const unsigned char *bytes, char *text)
{
    static const char hex[] = "0123456789abcdef";
    for (int at = 0; at < DIGEST; at++) {
        text[2 * at] = hex[bytes[at] >> 4];
        text[2 * at + 1] = hex[bytes[at] & 0xF];
    }
}

/* The bytes of a bytes attribute of a draft; a new reference, or NULL with TypeError. */
static PyObject *
bytes_field(PyObject *draft, PyObject *name)
{
    PyObject *value = PyObject_GetAttr(draft, name);
    if (value != NULL && !PyBytes_CheckExact(value)) {
        PyErr_Format(PyExc_TypeError, "a draft's %U must be bytes", name);
        Py_CLEAR(value);
    }
    return value;
}

static int
set_field(PyObject *entry, PyObject *name, PyObject *value)
{
    /* The generic setter, not the class's: an entry is frozen once made. */
    return PyObject_GenericSetAttr(entry, name, value);
}

/* One entry: the draft sealed at seq after prev_hash (64 hex digits, ASCII). */
static PyObject *
seal_one(PyTypeObject *entry_type, PyObject *draft, long long seq, PyObject *prev_hash)
{
    PyObject *head = NULL, *run_json = NULL, *rest = NULL, *kind = NULL, *entry = NULL;
    PyObject *canonical = NULL, *leaf = NULL, *hash = NULL;
    PyObject *number = NULL;
    unsigned char *scratch = NULL;
    PyObject *result = NULL;

    head = bytes_field(draft, name_head);
    run_json = head ? bytes_field(draft, name_run_json) : NULL;
    rest = run_json ? bytes_field(draft, name_rest) : NULL;
    kind = rest ? PyObject_GetAttr(draft, name_kind) : NULL;
    if (kind == NULL) {
        goto done;
    }
    Py_ssize_t kind_length, prev_length;
    const char *kind_text = PyUnicode_AsUTF8AndSize(kind, &kind_length);
    const char *prev_text = kind_text ? PyUnicode_AsUTF8AndSize(prev_hash, &prev_length) : NULL;
    if (prev_text == NULL) {
        goto done;
    }
    char seq_text[24];
    int seq_length = snprintf(seq_text, sizeof(seq_text), "%lld", seq);

    /* tail = ,"kind":"K","prev_hash":"P","run":R,"seq":N + rest */
    Py_ssize_t head_length = PyBytes_GET_SIZE(head);
    Py_ssize_t tail_length = LITERAL(KIND) + kind_length + LITERAL(PREV_HASH) + prev_length +
                             LITERAL(RUN) + PyBytes_GET_SIZE(run_json) + LITERAL(SEQ) +
                             seq_length + PyBytes_GET_SIZE(rest);
    Py_ssize_t hashed_length = head_length + tail_length;
    Py_ssize_t canonical_length = hashed_length + LITERAL(HASH) + 2 * DIGEST + LITERAL(QUOTE);
    /* canonical = head + ,"hash":"H" + tail, written after a 0x00 so the leaf hash needs no
     * copy; the text hashed for the entry's hash (head + tail) is written beside it. */
    scratch = PyMem_Malloc((size_t)(1 + canonical_length + hashed_length));
    if (scratch == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *leaf_input = scratch;
    unsigned char *text = scratch + 1;
    unsigned char *hashed = text + canonical_length;
    leaf_input[0] = 0x00;

    unsigned char *at = hashed;
#define PUT(source, count)                         \
    do {                                           \
        memcpy(at, (source), (size_t)(count));     \
        at += (count);                             \
    } while (0)
    PUT(PyBytes_AS_STRING(head), head_length);
    unsigned char *tail = at;
    PUT(KIND, LITERAL(KIND));
    PUT(kind_text, kind_length);
    PUT(PREV_HASH, LITERAL(PREV_HASH));
    PUT(prev_text, prev_length);
    PUT(RUN, LITERAL(RUN));
    PUT(PyBytes_AS_STRING(run_json), PyBytes_GET_SIZE(run_json));
    PUT(SEQ, LITERAL(SEQ));
    PUT(seq_text, seq_length);
    PUT(PyBytes_AS_STRING(rest), PyBytes_GET_SIZE(rest));

    unsigned char entry_digest[DIGEST];
    if (digest(hashed, (size_t)hashed_length, entry_digest) < 0) {
        goto done;
    }
    char hex[2 * DIGEST];
    to_hex(entry_digest, hex);

    at = text;
    PUT(PyBytes_AS_STRING(head), head_length);
    PUT(HASH, LITERAL(HASH));
    PUT(hex, 2 * DIGEST);
    PUT(QUOTE, LITERAL(QUOTE));
    PUT(tail, tail_length);
#undef PUT

    unsigned char leaf_digest[DIGEST];
    if (digest(leaf_input, (size_t)(1 + canonical_length), leaf_digest) < 0) {
        goto done;
    }
    canonical = PyBytes_FromStringAndSize((const char *)text, canonical_length);
    leaf = PyBytes_FromStringAndSize((const char *)leaf_digest, DIGEST);
    hash = PyUnicode_FromStringAndSize(hex, 2 * DIGEST);
    number = PyLong_FromLongLong(seq);
    if (canonical == NULL || leaf == NULL || hash == NULL || number == NULL) {
        goto done;
    }

    entry = entry_type->tp_alloc(entry_type, 0);
    if (entry == NULL) {
        goto done;
    }
    PyObject *const copied[] = {name_timestamp, name_session, name_run, name_transition,
                                name_body};
    for (size_t field = 0; field < sizeof(copied) / sizeof(copied[0]); field++) {
        PyObject *value = PyObject_GetAttr(draft, copied[field]);
        int stored = value == NULL ? -1 : set_field(entry, copied[field], value);
        Py_XDECREF(value);
        if (stored < 0) {
            goto done;
        }
    }
    if (set_field(entry, name_kind, kind) < 0 || set_field(entry, name_seq, number) < 0 ||
        set_field(entry, name_prev_hash, prev_hash) < 0 || set_field(entry, name_hash, hash) < 0 ||
        set_field(entry, name_canonical, canonical) < 0 || set_field(entry, name_leaf, leaf) < 0) {
        goto done;
    }
    result = Py_NewRef(entry);
done:
    PyMem_Free(scratch);
    Py_XDECREF(head);
    Py_XDECREF(run_json);
    Py_XDECREF(rest);
    Py_XDECREF(kind);
    Py_XDECREF(entry);
    Py_XDECREF(canonical);
    Py_XDECREF(leaf);
    Py_XDECREF(hash);
    Py_XDECREF(number);
    return result;
}

static PyObject *
seal_all(PyObject *module, PyObject *const *args, Py_ssize_t count)
{
    (void)module;
    if (count != 4) {
        PyErr_SetString(PyExc_TypeError,
                        "seal_all(entry_type, drafts, head_seq, head_hash) takes 4 arguments");
        return NULL;
    }
    PyObject *entry_type = args[0];
    PyObject *drafts = args[1];
    if (!PyType_Check(entry_type) || !PyList_Check(drafts) || !PyUnicode_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "seal_all takes a type, a list of drafts, an int and a str");
        return NULL;
    }
    long long seq = PyLong_AsLongLong(args[2]);
    if (seq == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_ssize_t size = PyList_GET_SIZE(drafts);
    PyObject *entries = PyList_New(size);
    if (entries == NULL) {
        return NULL;
    }
    PyObject *prev_hash = Py_NewRef(args[3]);
    for (Py_ssize_t at = 0; at < size; at++) {
        PyObject *draft = PyList_GET_ITEM(drafts, at);
        Py_INCREF(draft);
        PyObject *entry = seal_one((PyTypeObject *)entry_type, draft, seq + 1 + at, prev_hash);
        Py_DECREF(draft);
        Py_DECREF(prev_hash);
        prev_hash = NULL;
        if (entry == NULL) {
            Py_DECREF(entries);
            return NULL;
        }
        PyList_SET_ITEM(entries, at, entry);
        prev_hash = PyObject_GetAttr(entry, name_hash);
        if (prev_hash == NULL) {
            Py_DECREF(entries);
            return NULL;
        }
    }
    Py_XDECREF(prev_hash);
    return entries;
}

static PyObject *
node_hashes(PyObject *module, PyObject *const *args, Py_ssize_t count)
{
    (void)module;
    if (count != 3) {
        PyErr_SetString(PyExc_TypeError, "node_hashes(level, start, stop) takes 3 arguments");
        return NULL;
    }
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    Py_ssize_t stop = start == -1 && PyErr_Occurred() ? -1 : PyLong_AsSsize_t(args[2]);
    if (stop == -1 && PyErr_Occurred()) {
        return NULL;
    }
    Py_buffer level;
    if (PyObject_GetBuffer(args[0], &level, PyBUF_SIMPLE) < 0) {
        return NULL;
    }
    PyObject *result = NULL;
    if (start < 0 || stop < start || stop > level.len || (stop - start) % (2 * DIGEST)) {
        PyErr_SetString(PyExc_ValueError,
                        "node_hashes needs whole 64-byte pairs within the level");
        goto done;
    }
    Py_ssize_t pairs = (stop - start) / (2 * DIGEST);
    result = PyBytes_FromStringAndSize(NULL, pairs * DIGEST);
    if (result == NULL) {
        goto done;
    }
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    const unsigned char *in = (const unsigned char *)level.buf + start;
    unsigned char node[1 + 2 * DIGEST];
    node[0] = 0x01;
    for (Py_ssize_t pair = 0; pair < pairs; pair++) {
        memcpy(node + 1, in + pair * 2 * DIGEST, 2 * DIGEST);
        if (digest(node, sizeof(node), out + pair * DIGEST) < 0) {
            Py_CLEAR(result);
            goto done;
        }
    }
done:
    PyBuffer_Release(&level);
    return result;
}

static PyMethodDef methods[] = {
    {"seal_all", (PyCFunction)(void (*)(void))seal_all, METH_FASTCALL,
     "seal_all(entry_type, drafts, head_seq, head_hash, /)\n--\n\n"
     "The drafts sealed in order after the head, as entries of entry_type."},
    {"node_hashes", (PyCFunction)(void (*)(void))node_hashes, METH_FASTCALL,
     "node_hashes(level, start, stop, /)\n--\n\n"
     "SHA-256(0x01 || pair) of each 64-byte pair of level[start:stop], concatenated."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "assay.ledger._seal",
    .m_doc = "Sealing entries and hashing Merkle nodes with OpenSSL's SHA-256 (see entry.py).",
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__seal(void)
{
    if (sha256 == NULL) {
        sha256 = EVP_MD_fetch(NULL, "SHA2-256", NULL);
        if (sha256 == NULL) {
            PyErr_SetString(PyExc_ImportError, "OpenSSL has no SHA2-256 digest here");
            return NULL;
        }
    }
    static const FieldName names[] = {
        DRAFT_FIELD_NAMES,
        {&name_seq, "seq"},
        {&name_prev_hash, "prev_hash"},
        {&name_hash, "hash"},
        {&name_canonical, "canonical"},
        {&name_leaf, "_leaf"},
    };
    if (intern_field_names(names, sizeof(names) / sizeof(names[0])) < 0) {
        return NULL;
    }
    return PyModule_Create(&module_definition);
}

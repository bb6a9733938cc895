/* RFC 8785 canonical JSON of plain JSON values, in one pass, with a plain copy.
 *
 * canonical_copy(value) answers (text, copy) when value is made of exactly dict (string
 * keys), list, str, int within +-(2**53 - 1), finite float, bool and None; copy is what the
 * text parses back as (assay.ledger.canonical.loads), built in the same pass. For anything
 * else (a subclass, a tuple, a non-string key, a big integer, NaN, a lone surrogate) it
 * answers None, and the caller hands the value to the rfc8785 package, which writes what it
 * can and words every refusal. canonical(value) is the same without the copy.
 *
 * What is written follows RFC 8785: object members sorted by the UTF-16 code units of their
 * names; strings escaped as ECMAScript's JSON.stringify escapes them (\b \t \n \f \r \" \\,
 * other controls as \u00xx in lower case, everything else as UTF-8); numbers as
 * ECMAScript's Number::toString writes them, from the shortest digits that read back as the
 * same double (Python's repr finds those).
 *
 * No Python code runs while a value is read, but a collection the copy allocates may run
 * the garbage collector, and with it finalizers that change other objects; so each dict and
 * list is read into an array of new references first, and only that array is used.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#include "_fields.h"

#define SAFE_INTEGER 9007199254740991LL /* 2**53 - 1 */
#define STACK_BYTES 4096

/* Results of the writers: done, a Python error is set, or the value is not plain JSON. */
enum { DONE = 0, FAILED = -1, NOT_PLAIN = 1 };

typedef struct {
    char *data;
    Py_ssize_t length;
    Py_ssize_t capacity;
    int on_heap;
    char stack[STACK_BYTES];
} Buffer;

static int
grow(Buffer *buffer, Py_ssize_t extra)
{
    Py_ssize_t needed = buffer->length + extra;
    Py_ssize_t capacity = buffer->capacity;
    while (capacity < needed) {
        if (capacity > PY_SSIZE_T_MAX / 2) {
            PyErr_NoMemory();
            return FAILED;
        }
        capacity *= 2;
    }
    char *data;
    if (buffer->on_heap) {
        data = PyMem_Realloc(buffer->data, (size_t)capacity);
    }
    else {
        data = PyMem_Malloc((size_t)capacity);
        if (data != NULL) {
            memcpy(data, buffer->data, (size_t)buffer->length);
        }
    }
    if (data == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    buffer->data = data;
    buffer->capacity = capacity;
    buffer->on_heap = 1;
    return DONE;
}

static inline int
reserve(Buffer *buffer, Py_ssize_t extra)
{
    if (buffer->capacity - buffer->length >= extra) {
        return DONE;
    }
    return grow(buffer, extra);
}

static inline int
put(Buffer *buffer, const char *bytes, Py_ssize_t count)
{
    if (reserve(buffer, count) != DONE) {
        return FAILED;
    }
    memcpy(buffer->data + buffer->length, bytes, (size_t)count);
    buffer->length += count;
    return DONE;
}

static inline int
put_char(Buffer *buffer, char c)
{
    if (reserve(buffer, 1) != DONE) {
        return FAILED;
    }
    buffer->data[buffer->length++] = c;
    return DONE;
}

/* The escape each ASCII byte needs inside a string: 0 for none, else the letter after the
 * backslash ('u' for \u00xx). */
static char escapes[128];

static void
fill_escapes(void)
{
    for (int c = 0; c < 0x20; c++) {
        escapes[c] = 'u';
    }
    escapes['\b'] = 'b';
    escapes['\t'] = 't';
    escapes['\n'] = 'n';
    escapes['\f'] = 'f';
    escapes['\r'] = 'r';
    escapes['"'] = '"';
    escapes['\\'] = '\\';
}

static int
put_escape(Buffer *buffer, unsigned char c)
{
    static const char hex[] = "0123456789abcdef";
    char letter = escapes[c];
    if (letter == 'u') {
        char text[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 0xF]};
        return put(buffer, text, 6);
    }
    char text[2] = {'\\', letter};
    return put(buffer, text, 2);
}

/* A string as RFC 8785 writes it; NOT_PLAIN for a subclass or a lone surrogate. */
static int
write_string(Buffer *buffer, PyObject *text)
{
    if (!PyUnicode_CheckExact(text)) {
        return NOT_PLAIN;
    }
    Py_ssize_t length = PyUnicode_GET_LENGTH(text);
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    if (put_char(buffer, '"') != DONE) {
        return FAILED;
    }
    if (PyUnicode_IS_ASCII(text)) {
        const unsigned char *bytes = data;
        Py_ssize_t run = 0; /* where the bytes not yet written start */
        for (Py_ssize_t at = 0; at < length; at++) {
            if (escapes[bytes[at]] == 0) {
                continue;
            }
            if (put(buffer, (const char *)bytes + run, at - run) != DONE ||
                put_escape(buffer, bytes[at]) != DONE) {
                return FAILED;
            }
            run = at + 1;
        }
        if (put(buffer, (const char *)bytes + run, length - run) != DONE) {
            return FAILED;
        }
        return put_char(buffer, '"');
    }
    /* At most 4 bytes of UTF-8, or 6 of escape, per code point. */
    if (length > (PY_SSIZE_T_MAX - 1) / 6 || reserve(buffer, length * 6 + 1) != DONE) {
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        return FAILED;
    }
    for (Py_ssize_t at = 0; at < length; at++) {
        Py_UCS4 c = PyUnicode_READ(kind, data, at);
        if (c < 0x80) {
            if (escapes[c]) {
                if (put_escape(buffer, (unsigned char)c) != DONE) {
                    return FAILED;
                }
            }
            else {
                buffer->data[buffer->length++] = (char)c;
            }
        }
        else if (c < 0x800) {
            buffer->data[buffer->length++] = (char)(0xC0 | (c >> 6));
            buffer->data[buffer->length++] = (char)(0x80 | (c & 0x3F));
        }
        else if (c < 0x10000) {
            if (c >= 0xD800 && c <= 0xDFFF) {
                return NOT_PLAIN; /* a lone surrogate: no UTF-8 for it */
            }
            buffer->data[buffer->length++] = (char)(0xE0 | (c >> 12));
            buffer->data[buffer->length++] = (char)(0x80 | ((c >> 6) & 0x3F));
            buffer->data[buffer->length++] = (char)(0x80 | (c & 0x3F));
        }
        else {
            buffer->data[buffer->length++] = (char)(0xF0 | (c >> 18));
            buffer->data[buffer->length++] = (char)(0x80 | ((c >> 12) & 0x3F));
            buffer->data[buffer->length++] = (char)(0x80 | ((c >> 6) & 0x3F));
            buffer->data[buffer->length++] = (char)(0x80 | (c & 0x3F));
        }
    }
    return put_char(buffer, '"');
}

static int
write_integer(Buffer *buffer, long long value)
{
    char digits[24];
    int at = (int)sizeof(digits);
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value
                                             : (unsigned long long)value;
    do {
        digits[--at] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) {
        digits[--at] = '-';
    }
    return put(buffer, digits + at, (Py_ssize_t)sizeof(digits) - at);
}

/* A finite, non-zero double as ECMAScript's Number::toString writes it (ECMA-262
 * 7.1.12.1), from the shortest digits that read back as it (Python's repr). */
static int
write_double(Buffer *buffer, double value)
{
    if (value < 0) {
        if (put_char(buffer, '-') != DONE) {
            return FAILED;
        }
        value = -value;
    }
    char *repr = PyOS_double_to_string(value, 'r', 0, 0, NULL);
    if (repr == NULL) {
        return FAILED;
    }
    /* repr is digits with an optional '.', then an optional exponent: 1.5, 1e+21, 5e-324.
     * Read it as the digits s and the exponent n of ECMA-262: value = 0.s * 10**n. */
    char digits[32];
    int count = 0;
    int before_point = 0;
    int seen_point = 0;
    int exponent = 0;
    for (const char *at = repr; *at; at++) {
        if (*at >= '0' && *at <= '9') {
            if (count < (int)sizeof(digits)) {
                digits[count++] = *at;
            }
            if (!seen_point) {
                before_point++;
            }
        }
        else if (*at == '.') {
            seen_point = 1;
        }
        else if (*at == 'e' || *at == 'E') {
            exponent = atoi(at + 1);
            break;
        }
    }
    PyMem_Free(repr);
    int first = 0;
    while (first < count - 1 && digits[first] == '0') {
        first++;
    }
    int last = count;
    while (last > first + 1 && digits[last - 1] == '0') {
        last--;
    }
    int k = last - first;                        /* how many digits */
    int n = before_point + exponent - first;     /* where the point goes */
    const char *s = digits + first;
    char text[48];
    int length = 0;
    if (k <= n && n <= 21) {
        memcpy(text, s, (size_t)k);
        length = k;
        for (int zero = 0; zero < n - k; zero++) {
            text[length++] = '0';
        }
    }
    else if (0 < n && n <= 21) {
        memcpy(text, s, (size_t)n);
        length = n;
        text[length++] = '.';
        memcpy(text + length, s + n, (size_t)(k - n));
        length += k - n;
    }
    else if (-6 < n && n <= 0) {
        text[length++] = '0';
        text[length++] = '.';
        for (int zero = 0; zero < -n; zero++) {
            text[length++] = '0';
        }
        memcpy(text + length, s, (size_t)k);
        length += k;
    }
    else {
        text[length++] = s[0];
        if (k > 1) {
            text[length++] = '.';
            memcpy(text + length, s + 1, (size_t)(k - 1));
            length += k - 1;
        }
        length += snprintf(text + length, sizeof(text) - (size_t)length, "e%c%d",
                           n - 1 < 0 ? '-' : '+', abs(n - 1));
    }
    return put(buffer, text, length);
}

/* A number or literal; *copy (when asked for) is what its text reads back as. */
static int
write_scalar(Buffer *buffer, PyObject *value, PyObject **copy)
{
    if (value == Py_None) {
        if (put(buffer, "null", 4) != DONE) {
            return FAILED;
        }
    }
    else if (value == Py_True) {
        if (put(buffer, "true", 4) != DONE) {
            return FAILED;
        }
    }
    else if (value == Py_False) {
        if (put(buffer, "false", 5) != DONE) {
            return FAILED;
        }
    }
    else if (PyLong_CheckExact(value)) {
        int overflow = 0;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) {
            return FAILED;
        }
        if (overflow || number > SAFE_INTEGER || number < -SAFE_INTEGER) {
            return NOT_PLAIN;
        }
        if (write_integer(buffer, number) != DONE) {
            return FAILED;
        }
    }
    else if (PyFloat_CheckExact(value)) {
        double number = PyFloat_AS_DOUBLE(value);
        if (!isfinite(number)) {
            return NOT_PLAIN;
        }
        if (number == floor(number) && fabs(number) <= (double)SAFE_INTEGER) {
            /* Written as an integer (0 for -0.0), so it reads back as one. */
            long long whole = (long long)number;
            if (write_integer(buffer, whole) != DONE) {
                return FAILED;
            }
            if (copy != NULL) {
                *copy = PyLong_FromLongLong(whole);
                return *copy == NULL ? FAILED : DONE;
            }
            return DONE;
        }
        if (write_double(buffer, number) != DONE) {
            return FAILED;
        }
    }
    else {
        return NOT_PLAIN;
    }
    if (copy != NULL) {
        Py_INCREF(value);
        *copy = value;
    }
    return DONE;
}

/* Where a code point sorts in UTF-16 code-unit order: characters beyond U+FFFF (surrogate
 * pairs, D800 to DFFF) come after U+D7FF and before U+E000. Lone surrogates, which are
 * never written, sort last. */
static inline Py_UCS4
utf16_rank(Py_UCS4 c)
{
    if (c < 0xD800) {
        return c;
    }
    if (c >= 0x10000) {
        return 0xD800 + (c - 0x10000);
    }
    if (c >= 0xE000) {
        return c + 0x100000;
    }
    return c + 0x110000;
}

typedef struct {
    PyObject *key;
    PyObject *value;
} Member;

static int
compare_names(const void *left_member, const void *right_member)
{
    PyObject *left = ((const Member *)left_member)->key;
    PyObject *right = ((const Member *)right_member)->key;
    Py_ssize_t left_length = PyUnicode_GET_LENGTH(left);
    Py_ssize_t right_length = PyUnicode_GET_LENGTH(right);
    int left_kind = PyUnicode_KIND(left);
    int right_kind = PyUnicode_KIND(right);
    const void *left_data = PyUnicode_DATA(left);
    const void *right_data = PyUnicode_DATA(right);
    Py_ssize_t shorter = left_length < right_length ? left_length : right_length;
    if (left_kind == PyUnicode_1BYTE_KIND && right_kind == PyUnicode_1BYTE_KIND) {
        int order = memcmp(left_data, right_data, (size_t)shorter);
        if (order != 0) {
            return order;
        }
    }
    else {
        for (Py_ssize_t at = 0; at < shorter; at++) {
            Py_UCS4 a = PyUnicode_READ(left_kind, left_data, at);
            Py_UCS4 b = PyUnicode_READ(right_kind, right_data, at);
            if (a != b) {
                return utf16_rank(a) < utf16_rank(b) ? -1 : 1;
            }
        }
    }
    return (left_length > right_length) - (left_length < right_length);
}

static int write_value(Buffer *buffer, PyObject *value, PyObject **copy);

static void
release(PyObject **items, Py_ssize_t count)
{
    for (Py_ssize_t at = 0; at < count; at++) {
        Py_DECREF(items[at]);
    }
}

static int
write_list(Buffer *buffer, PyObject *list, PyObject **copy)
{
    Py_ssize_t count = PyList_GET_SIZE(list);
    if (count == 0) {
        if (copy != NULL && (*copy = PyList_New(0)) == NULL) {
            return FAILED;
        }
        return put(buffer, "[]", 2);
    }
    PyObject **items = PyMem_Malloc((size_t)count * sizeof(PyObject *));
    if (items == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    for (Py_ssize_t at = 0; at < count; at++) {
        items[at] = Py_NewRef(PyList_GET_ITEM(list, at));
    }
    PyObject *copied = NULL;
    int result = FAILED;
    if (copy != NULL && (copied = PyList_New(count)) == NULL) {
        goto done;
    }
    if (put_char(buffer, '[') != DONE) {
        goto done;
    }
    for (Py_ssize_t at = 0; at < count; at++) {
        if (at > 0 && put_char(buffer, ',') != DONE) {
            goto done;
        }
        PyObject *item = NULL;
        int written = write_value(buffer, items[at], copied ? &item : NULL);
        if (written != DONE) {
            result = written;
            goto done;
        }
        if (copied != NULL) {
            PyList_SET_ITEM(copied, at, item);
        }
    }
    result = put_char(buffer, ']');
done:
    release(items, count);
    PyMem_Free(items);
    if (result == DONE && copy != NULL) {
        *copy = copied;
    }
    else {
        Py_XDECREF(copied);
    }
    return result;
}

static int
write_object(Buffer *buffer, PyObject *object, PyObject **copy)
{
    Py_ssize_t count = PyDict_GET_SIZE(object);
    if (count == 0) {
        if (copy != NULL && (*copy = PyDict_New()) == NULL) {
            return FAILED;
        }
        return put(buffer, "{}", 2);
    }
    Member *members = PyMem_Malloc((size_t)count * sizeof(Member));
    if (members == NULL) {
        PyErr_NoMemory();
        return FAILED;
    }
    Py_ssize_t taken = 0;
    Py_ssize_t position = 0;
    PyObject *key;
    PyObject *value;
    int result = NOT_PLAIN;
    PyObject *copied = NULL;
    while (taken < count && PyDict_Next(object, &position, &key, &value)) {
        if (!PyUnicode_CheckExact(key)) {
            goto done;
        }
        members[taken].key = Py_NewRef(key);
        members[taken].value = Py_NewRef(value);
        taken++;
    }
    qsort(members, (size_t)taken, sizeof(Member), compare_names);
    result = FAILED;
    if (copy != NULL && (copied = PyDict_New()) == NULL) {
        goto done;
    }
    if (put_char(buffer, '{') != DONE) {
        goto done;
    }
    for (Py_ssize_t at = 0; at < taken; at++) {
        if (at > 0 && put_char(buffer, ',') != DONE) {
            goto done;
        }
        int written = write_string(buffer, members[at].key);
        if (written != DONE) {
            result = written;
            goto done;
        }
        if (put_char(buffer, ':') != DONE) {
            goto done;
        }
        PyObject *item = NULL;
        written = write_value(buffer, members[at].value, copied ? &item : NULL);
        if (written != DONE) {
            result = written;
            goto done;
        }
        if (copied != NULL) {
            int stored = PyDict_SetItem(copied, members[at].key, item);
            Py_DECREF(item);
            if (stored < 0) {
                goto done;
            }
        }
    }
    result = put_char(buffer, '}');
done:
    for (Py_ssize_t at = 0; at < taken; at++) {
        Py_DECREF(members[at].key);
        Py_DECREF(members[at].value);
    }
    PyMem_Free(members);
    if (result == DONE && copy != NULL) {
        *copy = copied;
    }
    else {
        Py_XDECREF(copied);
    }
    return result;
}

static int
write_value(Buffer *buffer, PyObject *value, PyObject **copy)
{
    if (PyUnicode_CheckExact(value)) {
        int written = write_string(buffer, value);
        if (written == DONE && copy != NULL) {
            *copy = Py_NewRef(value);
        }
        return written;
    }
    if (PyDict_CheckExact(value) || PyList_CheckExact(value)) {
        if (Py_EnterRecursiveCall(" while writing canonical JSON")) {
            return FAILED;
        }
        int written = PyDict_CheckExact(value) ? write_object(buffer, value, copy)
                                               : write_list(buffer, value, copy);
        Py_LeaveRecursiveCall();
        return written;
    }
    return write_scalar(buffer, value, copy);
}

static void
start_buffer(Buffer *buffer)
{
    buffer->data = buffer->stack;
    buffer->length = 0;
    buffer->capacity = STACK_BYTES;
    buffer->on_heap = 0;
}

static void
free_buffer(Buffer *buffer)
{
    if (buffer->on_heap) {
        PyMem_Free(buffer->data);
    }
}

static PyObject *
encode(PyObject *value, int with_copy)
{
    Buffer buffer;
    start_buffer(&buffer);
    PyObject *copy = NULL;
    PyObject *answer = NULL;
    int written = write_value(&buffer, value, with_copy ? &copy : NULL);
    if (written == NOT_PLAIN) {
        answer = Py_NewRef(Py_None);
    }
    else if (written == DONE) {
        PyObject *text = PyBytes_FromStringAndSize(buffer.data, buffer.length);
        if (text != NULL && with_copy) {
            answer = PyTuple_Pack(2, text, copy);
            Py_DECREF(text);
        }
        else {
            answer = text;
        }
    }
    Py_XDECREF(copy);
    free_buffer(&buffer);
    return answer;
}

static PyObject *
canonical_copy(PyObject *module, PyObject *value)
{
    (void)module;
    return encode(value, 1);
}

static PyObject *
canonical(PyObject *module, PyObject *value)
{
    (void)module;
    return encode(value, 0);
}

/* An id field (session, run, transition) as JSON: null, or a plain string. */
static int
write_id(Buffer *buffer, PyObject *value)
{
    if (value == Py_None) {
        return put(buffer, "null", 4);
    }
    return write_string(buffer, value);
}

/* stamped_draft(draft_type, kind, timestamp, body, session, run, transition): the draft
 * EntryDraft(kind, timestamp, body, session, run, transition) would be, made without
 * running its __init__: every field set, body replaced by its plain copy, and the pieces of
 * the sealed entry's canonical JSON (_head, _run, _rest) written as entry.py's __post_init__
 * writes them. kind must already be known to be a drafted kind and timestamp text that
 * entry.stamp wrote: neither is checked here. None when anything is not plain (a str
 * subclass, an id that is not a string or None, a body that is not plain JSON, one nested
 * too deeply): EntryDraft then checks it and words what is wrong. */
static PyObject *
stamped_draft(PyObject *module, PyObject *const *args, Py_ssize_t count)
{
    (void)module;
    if (count != 7 || !PyType_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "stamped_draft(draft_type, kind, timestamp, body, session, run, "
                        "transition) takes a type and 6 values");
        return NULL;
    }
    PyTypeObject *draft_type = (PyTypeObject *)args[0];
    PyObject *kind = args[1], *timestamp = args[2], *body = args[3];
    PyObject *const *ids = args + 4; /* session, run, transition */
    if (!PyUnicode_CheckExact(kind) || !PyUnicode_CheckExact(timestamp) ||
        !PyUnicode_IS_ASCII(timestamp)) {
        Py_RETURN_NONE;
    }
    Buffer head, run, rest;
    start_buffer(&head);
    start_buffer(&run);
    start_buffer(&rest);
    PyObject *copy = NULL, *head_bytes = NULL, *run_bytes = NULL, *rest_bytes = NULL;
    PyObject *draft = NULL, *answer = NULL;
    int written = put(&head, "{\"body\":", 8);
    if (written == DONE) {
        written = write_value(&head, body, &copy);
    }
    if (written == DONE) {
        written = write_id(&run, ids[1]);
    }
    if (written == DONE) {
        written = put(&rest, ",\"session\":", 11);
    }
    if (written == DONE) {
        written = write_id(&rest, ids[0]);
    }
    if (written == DONE) {
        written = put(&rest, ",\"timestamp\":", 13);
    }
    if (written == DONE) {
        written = write_string(&rest, timestamp);
    }
    if (written == DONE) {
        written = put(&rest, ",\"transition\":", 14);
    }
    if (written == DONE) {
        written = write_id(&rest, ids[2]);
    }
    if (written == DONE) {
        written = put_char(&rest, '}');
    }
    if (written == FAILED && PyErr_ExceptionMatches(PyExc_RecursionError)) {
        PyErr_Clear(); /* EntryDraft words it */
        written = NOT_PLAIN;
    }
    if (written == NOT_PLAIN) {
        answer = Py_NewRef(Py_None);
        goto done;
    }
    if (written == FAILED) {
        goto done;
    }
    head_bytes = PyBytes_FromStringAndSize(head.data, head.length);
    run_bytes = PyBytes_FromStringAndSize(run.data, run.length);
    rest_bytes = PyBytes_FromStringAndSize(rest.data, rest.length);
    if (head_bytes == NULL || run_bytes == NULL || rest_bytes == NULL) {
        goto done;
    }
    draft = draft_type->tp_alloc(draft_type, 0);
    if (draft == NULL) {
        goto done;
    }
    PyObject *const names[] = {name_kind,       name_timestamp, name_body,
                               name_session,    name_run,       name_transition,
                               name_head,       name_run_json,  name_rest};
    PyObject *const values[] = {kind,    timestamp,  copy,      ids[0],   ids[1],
                                ids[2],  head_bytes, run_bytes, rest_bytes};
    for (size_t at = 0; at < sizeof(names) / sizeof(names[0]); at++) {
        /* The generic setter, not the class's: a draft is frozen once made. */
        if (PyObject_GenericSetAttr(draft, names[at], values[at]) < 0) {
            goto done;
        }
    }
    answer = Py_NewRef(draft);
done:
    free_buffer(&head);
    free_buffer(&run);
    free_buffer(&rest);
    Py_XDECREF(copy);
    Py_XDECREF(head_bytes);
    Py_XDECREF(run_bytes);
    Py_XDECREF(rest_bytes);
    Py_XDECREF(draft);
    return answer;
}

static PyMethodDef methods[] = {
    {"stamped_draft", (PyCFunction)(void (*)(void))stamped_draft, METH_FASTCALL,
     "stamped_draft(draft_type, kind, timestamp, body, session, run, transition, /)\n--\n\n"
     "The EntryDraft of plain fields, made in C, else None (see entry.draft_now)."},
    {"canonical_copy", canonical_copy, METH_O,
     "canonical_copy(value, /)\n--\n\n"
     "(RFC 8785 text, the plain copy it reads back as) of plain JSON, else None."},
    {"canonical", canonical, METH_O,
     "canonical(value, /)\n--\n\n"
     "The RFC 8785 text of plain JSON, else None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "assay.ledger._canonical",
    .m_doc = "RFC 8785 canonical JSON of plain JSON values, in C (see canonical.py).",
    .m_methods = methods,
};

PyMODINIT_FUNC
PyInit__canonical(void)
{
    fill_escapes();
    static const FieldName names[] = {DRAFT_FIELD_NAMES};
    if (intern_field_names(names, sizeof(names) / sizeof(names[0])) < 0) {
        return NULL;
    }
    return PyModule_Create(&module_definition);
}

/*
 * Handles used after their free: freed twice, used after the free, and used
 * after the library made a new handle of the same kind (which an allocator
 * likes to place at the freed address). Every such call must return
 * TP_STATUS_WRONG_HANDLE and leave the newer handle untouched; built with
 * -fsanitize=address by the test `c_example`, any read of freed memory
 * aborts the run. Prints "ok: stale handles refused" when every check
 * passed.
 */

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tickpack.h"

static const char SCHEMA[] =
    "{\"entities\":[{\"name\":\"dot\",\"fields\":["
    "{\"name\":\"x\",\"type\":\"u32\"}]}]}";

static int failures = 0;

static void expect(TpStatus got, TpStatus want, const char *what) {
    if (got != want) {
        fprintf(stderr, "FAIL %s: got %s (%s), want %s\n", what,
                tp_status_name(got), tp_last_error_message(),
                tp_status_name(want));
        failures++;
    }
}

int main(void) {
    TpSchema *schema = NULL;
    expect(tp_schema_from_json((const uint8_t *)SCHEMA, strlen(SCHEMA), &schema),
           TP_STATUS_OK, "schema");

    /* Double free. */
    TpSnapshot *a = NULL;
    expect(tp_snapshot_new(schema, &a), TP_STATUS_OK, "snapshot a");
    expect(tp_snapshot_free(a), TP_STATUS_OK, "free a");
    expect(tp_snapshot_free(a), TP_STATUS_WRONG_HANDLE, "free a again");

    /* Use after free, with a newer handle made since. */
    TpSnapshot *b = NULL;
    expect(tp_snapshot_new(schema, &b), TP_STATUS_OK, "snapshot b");
    uint32_t id = 7, x = 42;
    expect(tp_snapshot_set_section(a, 0, &id, &x, 1, sizeof x),
           TP_STATUS_WRONG_HANDLE, "set a section of a after its free");
    size_t count = 99;
    expect(tp_snapshot_section_len(a, 0, &count), TP_STATUS_WRONG_HANDLE,
           "read a after its free");
    expect(tp_snapshot_section_len(b, 0, &count), TP_STATUS_OK, "read b");
    if (count != 0) {
        fprintf(stderr, "FAIL b was changed through a: %zu entities\n", count);
        failures++;
    }
    expect(tp_snapshot_free(a), TP_STATUS_WRONG_HANDLE, "free a a third time");
    expect(tp_snapshot_free(b), TP_STATUS_OK, "free b");

    /* A freed handle of another kind. */
    TpEncoder *enc = NULL;
    expect(tp_encoder_new(schema, TP_DEFAULT_LEVEL, &enc), TP_STATUS_OK, "encoder");
    expect(tp_encoder_free(enc), TP_STATUS_OK, "free encoder");
    expect(tp_encoder_set_checksum(enc, 1), TP_STATUS_WRONG_HANDLE,
           "use encoder after its free");

    expect(tp_schema_free(schema), TP_STATUS_OK, "free schema");
    expect(tp_schema_free(schema), TP_STATUS_WRONG_HANDLE, "free schema again");

    if (failures > 0) {
        fprintf(stderr, "%d failures\n", failures);
        return 1;
    }
    printf("ok: stale handles refused\n");
    return 0;
}

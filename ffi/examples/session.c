/*
 * A game server and four clients in one process, talking through the
 * tickpack C API over a simulated lossy link.
 *
 * Every tick the server moves its cars, starts a tick with the new world and
 * encodes one packet per client (a delta against what that client acked).
 * Each client link loses a share of the packets and of the acks in both
 * directions and sometimes delivers two packets in swapped order. Every
 * snapshot a client applies must equal the world of the tick it was sent
 * in, and after a last few ticks without loss every client must hold
 * exactly the server's world, read back through the same C structs the
 * server wrote.
 *
 * Build (from the repository root, after `cargo build -p tickpack-ffi`):
 *   cc -std=c99 -Iffi/include ffi/examples/session.c \
 *      target/debug/libtickpack_ffi.a -lpthread -ldl -lm -o session
 * Exits 0 and prints a summary when every check passed.
 */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickpack.h"

/* One car as the game stores it: 32 bytes, no padding, little-endian. */
typedef struct Car {
    float pos[3];
    float vel[3];
    float yaw;
    uint16_t speed;
    uint8_t lap;
    uint8_t flags;
} Car;

/* A pickup lying on the track: 16 bytes. */
typedef struct Pickup {
    float pos[3];
    uint32_t kind;
} Pickup;

static const char SCHEMA[] =
    "{\"entities\":["
    "{\"name\":\"car\",\"fields\":["
    "{\"name\":\"pos\",\"type\":\"f32\",\"len\":3},"
    "{\"name\":\"vel\",\"type\":\"f32\",\"len\":3},"
    "{\"name\":\"yaw\",\"type\":\"f32\"},"
    "{\"name\":\"speed\",\"type\":\"u16\"},"
    "{\"name\":\"lap\",\"type\":\"u8\"},"
    "{\"name\":\"flags\",\"type\":\"u8\"}]},"
    "{\"name\":\"pickup\",\"fields\":["
    "{\"name\":\"pos\",\"type\":\"f32\",\"len\":3},"
    "{\"name\":\"kind\",\"type\":\"u32\"}]}]}";

#define CARS 24
#define PICKUPS 8
#define CLIENTS 4
#define TICKS 300
#define SETTLE_TICKS 4
#define PACKET_CAP 4096
#define HISTORY 64 /* worlds kept to check what clients apply */

static int failures = 0;

/* Reports a failed call with the library's message and counts it. */
static int check(TpStatus status, const char *what) {
    if (status != TP_STATUS_OK) {
        fprintf(stderr, "FAIL %s: %s: %s\n", what, tp_status_name(status),
                tp_last_error_message());
        failures++;
        return 0;
    }
    return 1;
}

static void expect(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "FAIL %s\n", what);
        failures++;
    }
}

/* xorshift32: the same losses on every run. */
static uint32_t rng_state = 0x2545f491u;
static uint32_t rng(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}
static int chance(unsigned percent) { return rng() % 100u < percent; }

/* A packet held back by the link to be delivered after the next one. */
typedef struct Held {
    uint8_t bytes[PACKET_CAP];
    size_t len;
    int present;
} Held;

typedef struct Peer {
    uint16_t id;
    unsigned loss_percent;
    TpClient *client;
    Held held;
} Peer;

/* The server's world of each recent tick, by sequence, and a scratch
 * snapshot to read a client's state into. */
static TpSnapshot *history[HISTORY];
static TpSnapshot *seen;

static void deliver(Peer *peer, TpServer *server, const uint8_t *packet, size_t len) {
    TpReceived r;
    uint8_t msg[TP_CLIENT_MESSAGE_MAX];
    size_t msg_len = 0;
    if (!check(tp_client_receive(peer->client, packet, len, &r), "receive")) {
        return;
    }
    if (r.outcome == TP_OUTCOME_APPLIED) {
        uint16_t latest = 0;
        bool equal = false;
        check(tp_client_latest(peer->client, seen, &latest), "latest");
        expect(latest == r.sequence, "the applied packet is the newest");
        check(tp_snapshot_equal(seen, history[r.sequence % HISTORY], &equal), "equal");
        expect(equal, "an applied snapshot is the world of its tick");
    }
    /* Dropped packets are normal on a lossy link: late ones arrive stale,
     * and a delta whose baseline was lost cannot apply. */
    if (!check(tp_client_message(peer->client, msg, sizeof msg, &msg_len),
               "client message")) {
        return;
    }
    if (!chance(peer->loss_percent)) {
        /* The peer's own connection: its messages act for it alone. */
        check(tp_server_on_message_from(server, peer->id, msg, msg_len), "on message");
    }
}

static void move_world(Car *cars, Pickup *pickups, uint32_t *pickup_ids, unsigned tick) {
    for (unsigned i = 0; i < CARS; i++) {
        Car *c = &cars[i];
        if (i % 3 == tick % 3) { /* a third of the cars steer each tick */
            c->vel[0] += (float)((int)(rng() % 21) - 10) * 0.01f;
            c->vel[2] += (float)((int)(rng() % 21) - 10) * 0.01f;
            c->yaw += 0.05f;
        }
        for (int k = 0; k < 3; k++) {
            c->pos[k] += c->vel[k];
        }
        c->speed = (uint16_t)(c->speed + 1);
        if (tick % 97 == i) {
            c->lap++;
        }
    }
    /* Every 25 ticks a pickup is taken and a new one spawns elsewhere. */
    if (tick % 25 == 0) {
        unsigned slot = (tick / 25) % PICKUPS;
        pickup_ids[slot] = 1000 + tick;
        pickups[slot].pos[0] = (float)(rng() % 500);
        pickups[slot].kind = rng() % 4;
    }
}

int main(void) {
    TpSchema *schema = NULL;
    TpServer *server = NULL;
    TpSnapshot *world = NULL;
    Peer peers[CLIENTS];
    Car cars[CARS];
    uint32_t car_ids[CARS];
    Pickup pickups[PICKUPS];
    uint32_t pickup_ids[PICKUPS];
    uint8_t packet[PACKET_CAP];
    size_t record_size = 0;
    const unsigned losses[CLIENTS] = {0, 5, 20, 40};

    if (!check(tp_schema_from_json((const uint8_t *)SCHEMA, strlen(SCHEMA), &schema),
               "schema")) {
        return 1;
    }
    check(tp_schema_record_size(schema, 0, &record_size), "record size");
    expect(record_size == sizeof(Car), "car record size matches the C struct");
    check(tp_schema_record_size(schema, 1, &record_size), "record size");
    expect(record_size == sizeof(Pickup), "pickup record size matches the C struct");

    TpServerConfig config;
    check(tp_server_config_default(&config), "server config");
    check(tp_server_new(schema, NULL, &config, &server), "server");
    check(tp_snapshot_new(schema, &world), "world");
    check(tp_snapshot_new(schema, &seen), "client view");
    for (unsigned i = 0; i < HISTORY; i++) {
        check(tp_snapshot_new(schema, &history[i]), "history");
    }
    for (unsigned i = 0; i < CLIENTS; i++) {
        peers[i].id = (uint16_t)(10 + i);
        peers[i].loss_percent = losses[i];
        peers[i].held.present = 0;
        peers[i].client = NULL;
        check(tp_client_new(schema, NULL, NULL, &peers[i].client), "client");
        check(tp_server_add_client(server, peers[i].id), "add client");
    }
    if (failures) {
        return 1;
    }

    memset(cars, 0, sizeof cars);
    memset(pickups, 0, sizeof pickups);
    for (unsigned i = 0; i < CARS; i++) {
        car_ids[i] = 100 + i * 7;
        cars[i].pos[0] = (float)i * 4.0f;
        cars[i].vel[0] = 0.5f;
    }
    for (unsigned i = 0; i < PICKUPS; i++) {
        pickup_ids[i] = 1000 + i;
    }

    /* The API at its edges: a too small buffer names the size it needs and
     * the retry returns the same packet; a handle of the wrong kind and a
     * null pointer are refused with their own codes. */
    {
        uint16_t seq = 0;
        size_t needed = 0, written = 0;
        check(tp_snapshot_set_section(world, 0, car_ids, cars, CARS, sizeof(Car)), "cars");
        check(tp_server_begin_tick(server, world, &seq), "begin tick");
        check(tp_snapshot_set_section(history[seq % HISTORY], 0, car_ids, cars, CARS,
                                      sizeof(Car)),
              "history");
        expect(tp_server_encode(server, peers[0].id, packet, 4, &needed) ==
                   TP_STATUS_BUFFER_TOO_SMALL,
               "tiny buffer is too small");
        expect(needed > 4 && needed <= PACKET_CAP, "needed size is reported");
        check(tp_server_encode(server, peers[0].id, packet, sizeof packet, &written),
              "encode retry");
        expect(written == needed, "retry gives the packet whose size was reported");
        expect(tp_server_add_client((TpServer *)(void *)peers[0].client, 99) ==
                   TP_STATUS_WRONG_HANDLE,
               "a client is not a server");
        expect(tp_snapshot_section_len(world, 0, NULL) == TP_STATUS_NULL_POINTER,
               "null out-parameter");
        expect(tp_snapshot_set_section(world, 5, car_ids, cars, CARS, sizeof(Car)) ==
                   TP_STATUS_INVALID_ARGUMENT,
               "entity type past the schema");
        /* That packet is never delivered: client 0's link lost it. */
    }

    for (unsigned tick = 1; tick <= TICKS + SETTLE_TICKS; tick++) {
        int settle = tick > TICKS;
        uint16_t seq = 0;
        move_world(cars, pickups, pickup_ids, tick);
        check(tp_snapshot_set_section(world, 0, car_ids, cars, CARS, sizeof(Car)), "cars");
        /* Pickup ids are not sorted: the library sorts them. */
        check(tp_snapshot_set_section(world, 1, pickup_ids, pickups, PICKUPS, sizeof(Pickup)),
              "pickups");
        check(tp_server_begin_tick(server, world, &seq), "begin tick");
        {
            TpSnapshot *h = history[seq % HISTORY];
            check(tp_snapshot_set_section(h, 0, car_ids, cars, CARS, sizeof(Car)), "history");
            check(tp_snapshot_set_section(h, 1, pickup_ids, pickups, PICKUPS, sizeof(Pickup)),
                  "history");
        }
        for (unsigned i = 0; i < CLIENTS; i++) {
            Peer *p = &peers[i];
            size_t len = 0;
            if (!check(tp_server_encode(server, p->id, packet, sizeof packet, &len), "encode")) {
                continue;
            }
            if (!settle && chance(p->loss_percent)) {
                continue; /* lost */
            }
            if (!settle && !p->held.present && chance(p->loss_percent / 2)) {
                memcpy(p->held.bytes, packet, len); /* delivered after the next one */
                p->held.len = len;
                p->held.present = 1;
                continue;
            }
            deliver(p, server, packet, len);
            if (p->held.present) {
                deliver(p, server, p->held.bytes, p->held.len);
                p->held.present = 0;
            }
        }
        if (tick == TICKS / 2) {
            /* A corrupted packet is dropped with a reason, never applied. */
            TpReceived r;
            uint8_t junk[64];
            memset(junk, 0xA5, sizeof junk);
            check(tp_client_receive(peers[1].client, junk, sizeof junk, &r), "junk");
            expect(r.outcome == TP_OUTCOME_UNDECODABLE, "junk is undecodable");
            expect(strlen(tp_last_error_message()) > 0, "a dropped packet has a reason");
        }
    }

    /* Every client now holds the last tick's world, bit for bit. */
    for (unsigned i = 0; i < CLIENTS; i++) {
        uint16_t seq = 0;
        bool equal = false;
        size_t count = 0;
        Car got[CARS];
        TpClientStats cs;
        if (!check(tp_client_latest(peers[i].client, seen, &seq), "latest")) {
            continue;
        }
        check(tp_snapshot_equal(seen, world, &equal), "equal");
        expect(equal, "client holds the server's world");
        check(tp_snapshot_get_section(seen, 0, NULL, got, CARS, sizeof(Car), &count),
              "read cars back");
        expect(count == CARS && memcmp(got, cars, sizeof cars) == 0,
               "cars read back as the server wrote them");
        check(tp_client_stats(peers[i].client, &cs), "client stats");
        printf("client %u (loss %2u%%): applied %4llu (full %llu), stale %llu, "
               "unknown baseline %llu, undecodable %llu\n",
               (unsigned)peers[i].id, peers[i].loss_percent, (unsigned long long)cs.applied,
               (unsigned long long)cs.full, (unsigned long long)cs.stale,
               (unsigned long long)cs.unknown_baseline, (unsigned long long)cs.undecodable);
    }

    TpServerStats ss;
    check(tp_server_stats(server, &ss), "server stats");
    printf("server: %llu packets (%llu full) from %llu encodes, %.1f bytes per packet "
           "for %u bytes of records\n",
           (unsigned long long)ss.packets, (unsigned long long)ss.full,
           (unsigned long long)ss.encodes, ss.packets ? (double)ss.bytes / (double)ss.packets : 0.0,
           (unsigned)(sizeof cars + sizeof pickups));
    expect(ss.encodes < ss.packets, "clients with the same baseline share encodes");

    for (unsigned i = 0; i < CLIENTS; i++) {
        check(tp_client_free(peers[i].client), "free client");
    }
    check(tp_snapshot_free(seen), "free snapshot");
    for (unsigned i = 0; i < HISTORY; i++) {
        check(tp_snapshot_free(history[i]), "free snapshot");
    }
    check(tp_snapshot_free(world), "free snapshot");
    check(tp_server_free(server), "free server");
    check(tp_schema_free(schema), "free schema");

    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("ok: %d clients in sync after %d lossy ticks\n", CLIENTS, TICKS);
    return 0;
}

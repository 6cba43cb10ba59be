/*
 * A game server and two clients in one process, over real UDP sockets on
 * 127.0.0.1, through the tickpack C API's network endpoints.
 *
 * The server issues each player a connect token (a real game's backend
 * does that and hands it over HTTPS), runs 20 cars around a ring and a
 * few pickups, and sends each client only what its interest hook picks:
 * distance rate tiers around that player's own car (near cars every tick,
 * far ones every 2nd or 4th), pickups every tick. Every time a client
 * applies a snapshot, the example checks it equals, bit for bit, what the
 * server says it sent that client with that sequence. At the end the
 * first client leaves and the server must see it go.
 *
 * Build (from the repository root, after `cargo build -p tickpack-ffi`):
 *   c++ -std=c++17 -Iffi/include -Iffi/examples ffi/examples/net_lobby.cpp \
 *       target/debug/libtickpack_ffi.a -lpthread -ldl -lm -o net_lobby
 * Exits 0 and prints a summary when every check passed.
 */

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

#include "tickpack.hpp"

namespace {

// One car as the game stores it: 28 bytes, no padding, little-endian.
struct Car {
    float pos[3];
    float vel[3];
    float yaw;
};
static_assert(sizeof(Car) == 28, "Car must match the schema's record");

struct Pickup {
    float pos[3];
    uint32_t kind;
};
static_assert(sizeof(Pickup) == 16, "Pickup must match the schema's record");

const char SCHEMA[] = R"({"entities":[
  {"name":"car","fields":[
    {"name":"pos","type":"f32","len":3},
    {"name":"vel","type":"f32","len":3},
    {"name":"yaw","type":"f32"}]},
  {"name":"pickup","fields":[
    {"name":"pos","type":"f32","len":3},
    {"name":"kind","type":"u32"}]}]})";

constexpr int CARS = 20;
constexpr int PICKUPS = 4;
constexpr int PLAYERS = 2;
constexpr int TICKS = 240;
constexpr uint64_t TICK_MS = 16;
constexpr uint64_t PROTOCOL = 0x7469636b;  // "tick"
constexpr size_t MTU = 1200;

int failures = 0;

void expect(bool ok, const char *what) {
    if (!ok) {
        std::fprintf(stderr, "FAIL %s\n", what);
        failures++;
    }
}

// A non-blocking UDP socket bound to 127.0.0.1 on a free port; closes
// itself.
struct Socket {
    int fd = -1;
    TpAddress address{};

    Socket() {
        fd = socket(AF_INET, SOCK_DGRAM, 0);
        if (fd < 0) throw std::runtime_error("socket");
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa) != 0)
            throw std::runtime_error("bind");
        socklen_t len = sizeof sa;
        getsockname(fd, reinterpret_cast<sockaddr *>(&sa), &len);
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
        address = to_tp(sa);
    }
    ~Socket() { close(fd); }
    Socket(const Socket &) = delete;
    Socket &operator=(const Socket &) = delete;

    static TpAddress to_tp(const sockaddr_in &sa) {
        TpAddress a{};
        a.family = TP_ADDRESS_IPV4;
        a.port = ntohs(sa.sin_port);
        std::memcpy(a.bytes, &sa.sin_addr, 4);  // network byte order
        return a;
    }

    void send(const uint8_t *data, size_t len, const TpAddress &to) const {
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_port = htons(to.port);
        std::memcpy(&sa.sin_addr, to.bytes, 4);
        sendto(fd, data, len, 0, reinterpret_cast<const sockaddr *>(&sa), sizeof sa);
    }

    // One datagram, or false when none is waiting.
    bool receive(std::vector<uint8_t> &buf, TpAddress &from) const {
        buf.resize(65536);
        sockaddr_in sa{};
        socklen_t len = sizeof sa;
        ssize_t n = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr *>(&sa), &len);
        if (n < 0) return false;
        buf.resize(static_cast<size_t>(n));
        from = to_tp(sa);
        return true;
    }
};

// The world of tick `t`: cars on a ring of radius 100, pickups parked.
void fill_world(TpSnapshot *world, int t) {
    std::vector<uint32_t> ids;
    std::vector<Car> cars;
    for (int i = 0; i < CARS; i++) {
        float a = 0.02f * static_cast<float>(t) * (1.0f + 0.05f * static_cast<float>(i)) +
                  6.2831853f * static_cast<float>(i) / CARS;
        Car c{};
        c.pos[0] = 100.0f * std::cos(a);
        c.pos[1] = 100.0f * std::sin(a);
        c.vel[0] = -std::sin(a);
        c.vel[1] = std::cos(a);
        c.yaw = a;
        ids.push_back(static_cast<uint32_t>(i + 1));  // car i+1 is player i+1's
        cars.push_back(c);
    }
    tp::check(tp_snapshot_set_section(world, 0, ids.data(), cars.data(), cars.size(), sizeof(Car)),
              "set cars");
    std::vector<uint32_t> pids;
    std::vector<Pickup> pickups;
    for (int i = 0; i < PICKUPS; i++) {
        pids.push_back(static_cast<uint32_t>(100 + i));
        pickups.push_back(Pickup{{10.0f * static_cast<float>(i), 0.0f, 0.0f}, static_cast<uint32_t>(i)});
    }
    tp::check(tp_snapshot_set_section(world, 1, pids.data(), pickups.data(), pickups.size(),
                                      sizeof(Pickup)),
              "set pickups");
}

uint64_t unix_ms() {
    using namespace std::chrono;
    return static_cast<uint64_t>(
        duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count());
}

struct Player {
    uint64_t user;
    Socket socket;
    tp::NetClient client;
    int server_id = -1;  // its id on the server, from ClientConnected
    bool connected = false;
    int checked = 0;     // snapshots compared with the server's
    int partial = 0;     // of those, with cars left out by the tiers
};

}  // namespace

int main() {
    try {
        tp::Schema schema = tp::schema_from_json(SCHEMA);

        // The server: a fresh key (shared with the token issuer), tiers
        // on the cars' `pos`.
        TpNetServerConfig config;
        tp::check(tp_net_server_config_default(&config), "server config");
        config.protocol_id = PROTOCOL;
        config.mtu = MTU;
        tp::check(tp_net_key_generate(config.private_key, sizeof config.private_key), "key");
        static const char POS[] = "pos";
        TpInterestConfig interest{};
        interest.kind = TP_INTEREST_TIERED;
        interest.entity_type = 0;
        interest.position_field = reinterpret_cast<const uint8_t *>(POS);
        interest.position_field_len = sizeof POS - 1;
        interest.near = 60.0f;
        interest.far = 140.0f;
        interest.hold_skipped = 0;
        TpNetServer *raw_server = nullptr;
        tp::check(tp_net_server_new(schema.get(), nullptr, &config, &interest, &raw_server),
                  "tp_net_server_new");
        tp::NetServer server(raw_server);
        Socket server_socket;

        uint64_t now = unix_ms();  // the tokens' clock: since the Unix epoch

        // Each player gets a token and makes a client from it.
        TpNetClientConfig client_config;
        tp::check(tp_net_client_config_default(&client_config), "client config");
        client_config.mtu = MTU;
        std::vector<std::unique_ptr<Player>> players;
        for (int p = 0; p < PLAYERS; p++) {
            auto player = std::make_unique<Player>();
            player->user = static_cast<uint64_t>(p + 1);
            uint8_t token[TP_NET_TOKEN_BYTES];
            size_t token_len = 0;
            tp::check(tp_net_server_issue_token(server.get(), player->user, now, 60, 5, token,
                                                sizeof token, &token_len),
                      "issue token");
            TpNetClient *c = nullptr;
            tp::check(tp_net_client_new(schema.get(), nullptr, &client_config, token, token_len,
                                        &server_socket.address, now, &c),
                      "tp_net_client_new");
            player->client.reset(c);
            players.push_back(std::move(player));
        }

        tp::Snapshot world = tp::snapshot(schema);
        tp::Snapshot applied = tp::snapshot(schema);
        tp::Snapshot sent = tp::snapshot(schema);
        std::map<uint16_t, Player *> by_id;
        std::vector<uint8_t> buf(MTU), in;
        int left = 0;

        // Everything queued goes out; everything waiting comes in.
        auto pump = [&]() {
            for (int round = 0; round < 4; round++) {
                size_t len = 0;
                TpAddress to{};
                while (tp_net_server_poll_transmit(server.get(), now, buf.data(), buf.size(), &len,
                                                   &to) == TP_STATUS_OK)
                    server_socket.send(buf.data(), len, to);
                for (auto &pl : players) {
                    TpAddress from{};
                    while (pl->socket.receive(in, from))
                        tp::check(tp_net_client_handle(pl->client.get(), now, &from, in.data(),
                                                       in.size(), nullptr),
                                  "client handle");
                    tp::check(tp_net_client_handle_timeout(pl->client.get(), now), "client timeout");
                    while (tp_net_client_poll_transmit(pl->client.get(), now, buf.data(),
                                                       buf.size(), &len, &to) == TP_STATUS_OK)
                        pl->socket.send(buf.data(), len, to);
                }
                TpAddress from{};
                while (server_socket.receive(in, from))
                    tp::check(tp_net_server_handle(server.get(), now, &from, in.data(), in.size(),
                                                   nullptr),
                              "server handle");
                tp::check(tp_net_server_handle_timeout(server.get(), now), "server timeout");
            }
            TpNetEvent e;
            while (tp_net_server_poll_event(server.get(), &e) == TP_STATUS_OK) {
                if (e.kind == TP_NET_EVENT_KIND_CLIENT_CONNECTED)
                    for (auto &pl : players)
                        if (pl->user == e.user) {
                            pl->server_id = e.client;
                            by_id[e.client] = pl.get();
                        }
                if (e.kind == TP_NET_EVENT_KIND_CLIENT_DISCONNECTED &&
                    e.reason == TP_DISCONNECT_REASON_LEFT)
                    left++;
            }
            for (auto &pl : players) {
                bool applied_any = false;
                while (tp_net_client_poll_event(pl->client.get(), &e) == TP_STATUS_OK) {
                    if (e.kind == TP_NET_EVENT_KIND_CONNECTED) pl->connected = true;
                    if (e.kind == TP_NET_EVENT_KIND_SNAPSHOT_APPLIED) applied_any = true;
                }
                if (!applied_any || pl->server_id < 0) continue;
                // What the client applied must be what the server sent it.
                uint16_t seq = 0;
                tp::check(tp_net_client_latest(pl->client.get(), applied.get(), &seq), "latest");
                tp::check(tp_net_server_sent_state(server.get(), static_cast<uint16_t>(pl->server_id),
                                                   seq, sent.get()),
                          "sent state");
                bool equal = false;
                tp::check(tp_snapshot_equal(applied.get(), sent.get(), &equal), "equal");
                expect(equal, "a client applied what the server sent it");
                size_t cars = 0;
                tp::check(tp_snapshot_section_len(applied.get(), 0, &cars), "cars");
                pl->checked++;
                if (cars < static_cast<size_t>(CARS)) pl->partial++;
            }
        };

        for (int t = 0; t < TICKS; t++) {
            fill_world(world.get(), t);
            tp::check(tp_net_server_tick(server.get(), now, world.get(), nullptr), "tick");
            pump();
            now += TICK_MS;
        }

        for (auto &pl : players) {
            expect(pl->connected, "every client connected");
            bool connected = false;
            tp::check(tp_net_client_state(pl->client.get(), &connected, nullptr), "state");
            expect(connected, "every client is still connected");
            expect(pl->checked > TICKS / 2, "every client applied most ticks");
            expect(pl->partial > 0, "the tiers left far cars out of some snapshots");
            TpNetClientCounters counters;
            tp::check(tp_net_client_stats(pl->client.get(), &counters), "client stats");
            TpNetClientStats cost;
            tp::check(tp_net_server_client_stats(server.get(), static_cast<uint16_t>(pl->server_id),
                                                 &cost),
                      "server client stats");
            std::printf("player %llu (client %d): %d snapshots checked, %d with cars left out, "
                        "%llu applied, %llu bytes sent\n",
                        static_cast<unsigned long long>(pl->user), pl->server_id, pl->checked,
                        pl->partial, static_cast<unsigned long long>(counters.applied),
                        static_cast<unsigned long long>(cost.bytes));
        }

        // The first player leaves; the server must see it go.
        tp::check(tp_net_client_disconnect(players[0]->client.get(), now), "disconnect");
        for (int t = 0; t < 4 && left == 0; t++) {
            tp::check(tp_net_server_tick(server.get(), now, world.get(), nullptr), "tick");
            pump();
            now += TICK_MS;
        }
        expect(left == 1, "the server saw the first player leave");
        TpNetServerStats stats;
        tp::check(tp_net_server_stats(server.get(), &stats), "server stats");
        expect(stats.clients == PLAYERS - 1, "one client remains");
    } catch (const std::exception &e) {
        std::fprintf(stderr, "FAIL %s\n", e.what());
        return 1;
    }
    if (failures != 0) {
        std::fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    std::printf("ok: %d clients applied what the server sent them\n", PLAYERS);
    return 0;
}

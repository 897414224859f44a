/* A logging HTTP/1.1 target for benches/replay/accuracy.sh: one epoll thread
 * on 127.0.0.1 that answers every request `200 ok` on a kept connection and
 * writes, per request, the offset its path carries (GET /o/<offset_us>/...)
 * and the CLOCK_MONOTONIC time its first byte was read, in ns. C and one
 * thread so that the server's own delay is small next to the 1 ms measured.
 *
 *   arrivals PORT_FILE LOG_FILE      (prints its port to PORT_FILE; SIGTERM ends it)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_FD 65536
#define BUF 8192

static char *buffers[MAX_FD];
static int filled[MAX_FD];
static long long first_byte[MAX_FD];
static volatile sig_atomic_t done = 0;

static void on_term(int sig) { (void)sig; done = 1; }

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: arrivals PORT_FILE LOG_FILE\n"); return 2; }
    signal(SIGTERM, on_term);
    signal(SIGPIPE, SIG_IGN);
    FILE *log = fopen(argv[2], "w");
    if (!log) { perror("log"); return 1; }
    static char logbuf[1 << 22];
    setvbuf(log, logbuf, _IOFBF, sizeof logbuf);
    int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) || listen(listener, 4096)) { perror("listen"); return 1; }
    socklen_t len = sizeof addr;
    getsockname(listener, (struct sockaddr *)&addr, &len);
    FILE *port = fopen(argv[1], "w");
    fprintf(port, "%d\n", ntohs(addr.sin_port));
    fclose(port);
    int ep = epoll_create1(0);
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = listener };
    epoll_ctl(ep, EPOLL_CTL_ADD, listener, &ev);
    static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    struct epoll_event events[256];
    while (!done) {
        int n = epoll_wait(ep, events, 256, 200);
        long long at = now_ns();
        for (int i = 0; i < n; i++) {
            int fd = events[i].data.fd;
            if (fd == listener) {
                int c;
                while ((c = accept4(listener, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
                    if (c >= MAX_FD) { close(c); continue; }
                    setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    if (!buffers[c]) buffers[c] = malloc(BUF);
                    filled[c] = 0;
                    struct epoll_event cev = { .events = EPOLLIN, .data.fd = c };
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &cev);
                }
                continue;
            }
            for (;;) {
                if (filled[fd] == BUF) filled[fd] = 0; /* not a request this bench sends */
                ssize_t got = read(fd, buffers[fd] + filled[fd], BUF - filled[fd]);
                if (got == 0 || (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                    close(fd);
                    filled[fd] = 0;
                    break;
                }
                if (got < 0) break;
                if (filled[fd] == 0) first_byte[fd] = at;
                filled[fd] += (int)got;
                char *end;
                while ((end = memmem(buffers[fd], filled[fd], "\r\n\r\n", 4))) {
                    long long offset = -1;
                    if (!strncmp(buffers[fd], "GET /o/", 7)) offset = atoll(buffers[fd] + 7);
                    fprintf(log, "%lld %lld\n", offset, first_byte[fd]);
                    if (write(fd, reply, sizeof reply - 1) < 0) { /* the client went away */ }
                    int used = (int)(end + 4 - buffers[fd]);
                    memmove(buffers[fd], end + 4, filled[fd] - used);
                    filled[fd] -= used;
                    first_byte[fd] = at;
                }
            }
        }
    }
    fclose(log);
    return 0;
}

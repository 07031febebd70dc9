// Copyright The otelcol-processctx Authors
// SPDX-License-Identifier: Apache-2.0

/*
 * Independent C publisher of an OpenTelemetry process context (OTEP 4719),
 * used by the Go tests as a real child process.
 *
 * Build: gcc -O2 -Wall -Wextra -Werror -std=gnu11 -pthread -o cpub publisher.c
 *
 * Usage: cpub [-separate] [-anon]
 *        cpub [-separate] [-anon] -life <ms> -service <name> [-update-every <ms>] [-update-hold <ms>]
 *   -separate  payload lives in a malloc'd buffer instead of right after the header
 *   -anon      skip memfd_create, use an anonymous private mapping
 *
 * Soak mode (-life): no control protocol. The process publishes
 * {service.name=<name>} at once, prints "ready <pid> 0x<header address>",
 * then lives for <ms> milliseconds (0: until killed) and exits 0 without
 * unpublishing (the mapping ends with the process), as a short-lived
 * service would. stdin is not read. With -update-every it updates its
 * context every <ms> milliseconds (adding soak.update=<n>); -update-hold
 * keeps every update's timestamp at 0 (being written) for <ms> ms before
 * writing the payload, so that a signal is likely to land mid-update.
 *
 * Control protocol (stdin, one command per line; exactly one answer line each):
 *   publish <hex>            -> ok 0x<header address> | err ...
 *   update <hex>             -> ok 0x<header address> | err ...
 *   unpublish                -> ok | err ...
 *   header <sighex> <version> <payload_size> <timestamp> <inline|unmapped|0xPTR> -> ok
 *   spin <millis>            -> ok <number of updates>
 *   stall header             -> ok 0x<address>: a new context mapping whose
 *                               pages are registered with userfaultfd and
 *                               never served: any read of it waits
 *   stall payload            -> ok 0x<address>: the published header now
 *                               points at such a page
 *   unstall                  -> ok: unmaps the stalled page and closes the
 *                               userfaultfd, which ends the waits
 *   fork                     -> ok <pid>: a child that only waits (it dies
 *                               with this process); the context mapping is
 *                               MADV_DONTFORK: the child has none
 *   exit                     -> ok, then exit 0
 * EOF on stdin -> exit 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001U
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002U
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_SET_VMA_ANON_NAME
#define PR_SET_VMA_ANON_NAME 0
#endif
#ifndef MADV_DONTFORK
#define MADV_DONTFORK 10
#endif

#define HEADER_SIZE 32u
#define MIN_PAYLOAD_ROOM 8192u
#define CTX_NAME "OTEL_CTX"
#define CTX_VERSION 2u

/* Header layout at the start of the mapping (little-endian on amd64). */
struct otel_ctx_header {
	char signature[8];             /* "OTEL_CTX", no NUL */
	uint32_t version;              /* 2 */
	uint32_t payload_size;         /* bytes */
	uint64_t published_at_ns;      /* CLOCK_BOOTTIME ns; 0 = being written */
	uint64_t payload;              /* address in this process */
};

_Static_assert(sizeof(struct otel_ctx_header) == HEADER_SIZE, "header must be 32 bytes");

/* ---------- publisher state ---------- */

static int opt_separate;
static int opt_anon;
static uint64_t opt_update_hold_ms; /* soak mode: time an update holds ts at 0 */

static int published;
static unsigned char *map_addr;  /* header address */
static size_t map_len;
static unsigned char *cur_buf;   /* heap buffer referenced by the header (or NULL) */
static unsigned char *prev_buf;  /* heap buffer of the previous update (kept alive) */
static uint64_t last_ts;         /* largest timestamp we ever stored */

static struct otel_ctx_header *hdr(void)
{
	return (struct otel_ctx_header *)(void *)map_addr;
}

static uint64_t boottime_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(uint64_t ms)
{
	struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

/* A timestamp strictly larger than anything published before, and non-zero. */
static uint64_t next_timestamp(uint64_t old)
{
	uint64_t base = old > last_ts ? old : last_ts;
	uint64_t now = boottime_ns();
	uint64_t ts = now;
	if (base != UINT64_MAX && ts < base + 1)
		ts = base + 1;
	if (ts == 0)
		ts = 1;
	last_ts = ts;
	return ts;
}

static void store_ts(uint64_t v)
{
	__atomic_store_n(&hdr()->published_at_ns, v, __ATOMIC_SEQ_CST);
}

static uint64_t load_ts(void)
{
	return __atomic_load_n(&hdr()->published_at_ns, __ATOMIC_SEQ_CST);
}

static void store_fields(uint32_t version, uint32_t size, uint64_t ptr)
{
	struct otel_ctx_header *h = hdr();
	__atomic_store_n(&h->version, version, __ATOMIC_RELAXED);
	__atomic_store_n(&h->payload_size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&h->payload, ptr, __ATOMIC_RELAXED);
}

static void name_mapping(void)
{
	/* Fails with EINVAL on kernels without CONFIG_ANON_VMA_NAME: ignored. */
	(void)prctl(PR_SET_VMA, PR_SET_VMA_ANON_NAME, (unsigned long)map_addr,
		    (unsigned long)map_len, (unsigned long)CTX_NAME);
}

static size_t page_round(size_t n)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t p = ps > 0 ? (size_t)ps : 4096u;
	return (n + p - 1) / p * p;
}

static void *create_mapping(size_t len)
{
	void *addr = MAP_FAILED;

	if (!opt_anon) {
		int fd = memfd_create(CTX_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_NOEXEC_SEAL);
		if (fd < 0 && errno == EINVAL)
			fd = memfd_create(CTX_NAME, MFD_CLOEXEC | MFD_ALLOW_SEALING);
		if (fd >= 0) {
			if (ftruncate(fd, (off_t)len) == 0)
				addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
			close(fd);
		}
	}
	if (addr == MAP_FAILED)
		addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (addr == MAP_FAILED)
		return NULL;
	(void)madvise(addr, len, MADV_DONTFORK);
	return addr;
}

/* ---------- operations ---------- */

static const char *do_publish(const unsigned char *payload, size_t len)
{
	if (published)
		return "already published";
	if (len == 0)
		return "empty payload";
	if (len > UINT32_MAX)
		return "payload too large";

	size_t room = len > MIN_PAYLOAD_ROOM ? len : MIN_PAYLOAD_ROOM;
	size_t mlen = page_round(HEADER_SIZE + room);
	unsigned char *buf = NULL;

	if (opt_separate) {
		buf = malloc(len);
		if (buf == NULL)
			return "out of memory";
		memcpy(buf, payload, len);
	}

	void *addr = create_mapping(mlen);
	if (addr == NULL) {
		free(buf);
		return "mmap failed";
	}
	map_addr = addr;
	map_len = mlen;

	uint64_t ptr;
	if (opt_separate) {
		ptr = (uint64_t)(uintptr_t)buf;
	} else {
		memcpy(map_addr + HEADER_SIZE, payload, len);
		ptr = (uint64_t)(uintptr_t)(map_addr + HEADER_SIZE);
	}
	cur_buf = buf;
	prev_buf = NULL;

	memcpy(hdr()->signature, CTX_NAME, 8);
	store_fields(CTX_VERSION, (uint32_t)len, ptr);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	store_ts(next_timestamp(0));

	name_mapping();
	published = 1;
	return NULL;
}

static const char *do_update(const unsigned char *payload, size_t len)
{
	if (!published)
		return "not published";
	if (len == 0)
		return "empty payload";
	if (len > UINT32_MAX)
		return "payload too large";

	int use_inline = !opt_separate && HEADER_SIZE + len <= map_len;
	unsigned char *buf = NULL;
	if (!use_inline) {
		buf = malloc(len);
		if (buf == NULL)
			return "out of memory";
		memcpy(buf, payload, len);
	}

	uint64_t old = load_ts();
	store_ts(0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (opt_update_hold_ms)
		sleep_ms(opt_update_hold_ms);

	uint64_t ptr;
	if (use_inline) {
		memcpy(map_addr + HEADER_SIZE, payload, len);
		ptr = (uint64_t)(uintptr_t)(map_addr + HEADER_SIZE);
	} else {
		ptr = (uint64_t)(uintptr_t)buf;
	}
	store_fields(CTX_VERSION, (uint32_t)len, ptr);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	store_ts(next_timestamp(old));

	/* Free the buffer from two updates ago; keep the previous one alive. */
	free(prev_buf);
	prev_buf = cur_buf;
	cur_buf = buf;

	name_mapping();
	return NULL;
}

static const char *do_unpublish(void)
{
	if (!published)
		return "not published";
	store_ts(0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	munmap(map_addr, map_len);
	map_addr = NULL;
	map_len = 0;
	free(cur_buf);
	free(prev_buf);
	cur_buf = prev_buf = NULL;
	published = 0;
	return NULL;
}

/* ---------- helpers: hex, protobuf ---------- */

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decodes hex into a new malloc'd buffer; returns NULL on error (msg set). */
static unsigned char *hex_decode(const char *s, size_t *out_len, const char **msg)
{
	size_t n = strlen(s);
	if (n == 0) {
		*msg = "empty payload";
		return NULL;
	}
	if (n % 2 != 0) {
		*msg = "odd-length hex";
		return NULL;
	}
	unsigned char *b = malloc(n / 2);
	if (b == NULL) {
		*msg = "out of memory";
		return NULL;
	}
	for (size_t i = 0; i < n / 2; i++) {
		int hi = hexval((unsigned char)s[2 * i]);
		int lo = hexval((unsigned char)s[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			free(b);
			*msg = "invalid hex";
			return NULL;
		}
		b[i] = (unsigned char)(hi << 4 | lo);
	}
	*out_len = n / 2;
	return b;
}

struct pbuf {
	unsigned char *p;
	size_t len, cap;
};

static int pb_reserve(struct pbuf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return 0;
	size_t nc = b->cap ? b->cap : 256;
	while (nc < b->len + extra)
		nc *= 2;
	unsigned char *np = realloc(b->p, nc);
	if (np == NULL)
		return -1;
	b->p = np;
	b->cap = nc;
	return 0;
}

static int pb_varint(struct pbuf *b, uint64_t v)
{
	if (pb_reserve(b, 10) != 0)
		return -1;
	do {
		unsigned char c = v & 0x7f;
		v >>= 7;
		if (v)
			c |= 0x80;
		b->p[b->len++] = c;
	} while (v);
	return 0;
}

/* Length-delimited field (wire type 2). */
static int pb_bytes(struct pbuf *b, unsigned field, const void *data, size_t n)
{
	if (pb_varint(b, ((uint64_t)field << 3) | 2) != 0 || pb_varint(b, n) != 0 ||
	    pb_reserve(b, n) != 0)
		return -1;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	return 0;
}

/* KeyValue{ key = 1, value = 2: AnyValue{ string_value = 1 } } */
static int pb_kv_string(struct pbuf *out, const char *key, const char *val, size_t vlen)
{
	struct pbuf any = {0}, kv = {0};
	int rc = -1;
	if (pb_bytes(&any, 1, val, vlen) == 0 &&
	    pb_bytes(&kv, 1, key, strlen(key)) == 0 &&
	    pb_bytes(&kv, 2, any.p, any.len) == 0 &&
	    pb_bytes(out, 1, kv.p, kv.len) == 0)
		rc = 0;
	free(any.p);
	free(kv.p);
	return rc;
}

/* ProcessContext{ resource = 1: Resource{ attributes = 1: seq, filler, check } } */
static int spin_payload(struct pbuf *out, uint64_t n)
{
	char num[32], filler[300];
	int nl = snprintf(num, sizeof num, "%" PRIu64, n);
	size_t fl = (size_t)(n % 300);
	memset(filler, 'a' + (int)(n % 26), fl);

	struct pbuf res = {0};
	int rc = -1;
	out->len = 0;
	if (pb_kv_string(&res, "seq", num, (size_t)nl) == 0 &&
	    pb_kv_string(&res, "filler", filler, fl) == 0 &&
	    pb_kv_string(&res, "check", num, (size_t)nl) == 0 &&
	    pb_bytes(out, 1, res.p, res.len) == 0)
		rc = 0;
	free(res.p);
	return rc;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	if (s == NULL || *s == '\0')
		return -1;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -1;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -1;
	*out = (uint64_t)v;
	return 0;
}

/* ---------- command loop ---------- */

static void reply(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void reply(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static void reply_addr(void)
{
	reply("ok 0x%" PRIxPTR, (uintptr_t)map_addr);
}

static void cmd_publish_update(int is_update, char *arg)
{
	if (arg == NULL || *arg == '\0') {
		reply("err empty payload");
		return;
	}
	const char *msg = NULL;
	size_t len = 0;
	unsigned char *payload = hex_decode(arg, &len, &msg);
	if (payload == NULL) {
		reply("err %s", msg);
		return;
	}
	msg = is_update ? do_update(payload, len) : do_publish(payload, len);
	free(payload);
	if (msg)
		reply("err %s", msg);
	else
		reply_addr();
}

static void cmd_header(char **args, int nargs)
{
	if (!published) {
		reply("err not published");
		return;
	}
	if (nargs != 5) {
		reply("err usage: header <sighex> <version> <payload_size> <timestamp> <ptr>");
		return;
	}
	const char *msg = NULL;
	size_t siglen = 0;
	if (strlen(args[0]) != 16) {
		reply("err signature must be 16 hex chars");
		return;
	}
	unsigned char *sig = hex_decode(args[0], &siglen, &msg);
	if (sig == NULL) {
		reply("err %s", msg);
		return;
	}
	uint64_t version, size, ts, ptr;
	if (parse_u64(args[1], UINT32_MAX, &version) != 0 ||
	    parse_u64(args[2], UINT32_MAX, &size) != 0 ||
	    parse_u64(args[3], UINT64_MAX, &ts) != 0) {
		free(sig);
		reply("err bad number");
		return;
	}
	if (strcmp(args[4], "inline") == 0) {
		ptr = (uint64_t)(uintptr_t)(map_addr + HEADER_SIZE);
	} else if (strcmp(args[4], "unmapped") == 0) {
		long ps = sysconf(_SC_PAGESIZE);
		size_t pl = ps > 0 ? (size_t)ps : 4096u;
		void *p = mmap(NULL, pl, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			free(sig);
			reply("err mmap failed");
			return;
		}
		munmap(p, pl);
		ptr = (uint64_t)(uintptr_t)p;
	} else if (strncmp(args[4], "0x", 2) == 0 || strncmp(args[4], "0X", 2) == 0) {
		const char *h = args[4] + 2;
		char *end;
		if (*h == '\0' || hexval((unsigned char)*h) < 0) {
			free(sig);
			reply("err bad pointer");
			return;
		}
		errno = 0;
		unsigned long long v = strtoull(h, &end, 16);
		if (errno != 0 || *end != '\0') {
			free(sig);
			reply("err bad pointer");
			return;
		}
		ptr = (uint64_t)v;
	} else {
		free(sig);
		reply("err bad pointer");
		return;
	}

	store_ts(0);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	memcpy(hdr()->signature, sig, 8);
	store_fields((uint32_t)version, (uint32_t)size, ptr);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	store_ts(ts);
	if (ts > last_ts)
		last_ts = ts;
	free(sig);
	reply("ok");
}

static void cmd_spin(char *arg)
{
	uint64_t ms;
	if (parse_u64(arg, UINT64_MAX / 2, &ms) != 0) {
		reply("err bad millis");
		return;
	}
	if (!published) {
		reply("err not published");
		return;
	}
	struct pbuf b = {0};
	uint64_t start = monotonic_ms(), n = 0;
	const char *msg = NULL;
	do {
		n++;
		if (spin_payload(&b, n) != 0) {
			msg = "out of memory";
			break;
		}
		msg = do_update(b.p, b.len);
		if (msg)
			break;
	} while (monotonic_ms() - start < ms);
	free(b.p);
	if (msg)
		reply("err %s", msg);
	else
		reply("ok %" PRIu64, n);
}

/* ---------- hostile: memory that never answers ---------- */

static int stall_fd = -1;
static unsigned char *stall_addr;
static size_t stall_len;

/* register_stall registers [addr, addr+len) with a new userfaultfd in
 * missing mode; nobody serves it, so a fault there waits. */
static const char *register_stall(unsigned char *addr, size_t len)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (fd < 0)
		return "userfaultfd failed";
	struct uffdio_api api = {.api = UFFD_API};
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		close(fd);
		return "UFFDIO_API failed";
	}
	struct uffdio_register reg = {
		.range = {.start = (unsigned long)addr, .len = len},
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	if (ioctl(fd, UFFDIO_REGISTER, &reg) != 0) {
		close(fd);
		return "UFFDIO_REGISTER failed";
	}
	stall_fd = fd;
	stall_addr = addr;
	stall_len = len;
	return NULL;
}

static void cmd_stall(const char *what)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t pl = ps > 0 ? (size_t)ps : 4096u;
	const char *msg = NULL;
	if (stall_fd >= 0) {
		reply("err already stalled");
		return;
	}
	if (what != NULL && strcmp(what, "header") == 0) {
		/* A context mapping nobody ever wrote: its page is missing. */
		int fd = memfd_create(CTX_NAME, MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)pl) != 0) {
			reply("err memfd failed");
			return;
		}
		void *m = mmap(NULL, pl, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
		close(fd);
		if (m == MAP_FAILED) {
			reply("err mmap failed");
			return;
		}
		msg = register_stall(m, pl);
	} else if (what != NULL && strcmp(what, "payload") == 0) {
		if (!published) {
			reply("err not published");
			return;
		}
		void *m = mmap(NULL, pl, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			reply("err mmap failed");
			return;
		}
		msg = register_stall(m, pl);
		if (msg == NULL) {
			uint64_t old = load_ts();
			store_ts(0);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			store_fields(CTX_VERSION, 64, (uint64_t)(uintptr_t)m);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			store_ts(next_timestamp(old));
		}
	} else {
		reply("err stall header|payload");
		return;
	}
	if (msg != NULL) {
		reply("err %s", msg);
		return;
	}
	reply("ok 0x%" PRIxPTR, (uintptr_t)stall_addr);
}

static void cmd_fork(void)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0) {
		reply("err fork: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		/* The child must not read the parent's commands, and must not outlive it. */
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(0);
		for (;;)
			pause();
	}
	reply("ok %ld", (long)pid);
}

static void cmd_unstall(void)
{
	if (stall_fd < 0) {
		reply("err not stalled");
		return;
	}
	munmap(stall_addr, stall_len);
	close(stall_fd);
	stall_fd = -1;
	reply("ok");
}

/* ---------- soak mode: publish, live, exit ---------- */

/* ProcessContext{ resource = 1: Resource{ attributes = 1: service.name[, soak.update] } } */
static int service_payload(struct pbuf *out, const char *service, uint64_t update)
{
	struct pbuf res = {0};
	char num[32];
	int rc = -1;
	out->len = 0;
	if (pb_kv_string(&res, "service.name", service, strlen(service)) != 0)
		goto done;
	if (update) {
		int nl = snprintf(num, sizeof num, "%" PRIu64, update);
		if (pb_kv_string(&res, "soak.update", num, (size_t)nl) != 0)
			goto done;
	}
	if (pb_bytes(out, 1, res.p, res.len) == 0)
		rc = 0;
done:
	free(res.p);
	return rc;
}

static int soak_main(const char *service, uint64_t life_ms, uint64_t every_ms)
{
	struct pbuf b = {0};
	const char *msg = NULL;
	if (service_payload(&b, service, 0) != 0)
		msg = "out of memory";
	else
		msg = do_publish(b.p, b.len);
	if (msg) {
		fprintf(stderr, "publish: %s\n", msg);
		return 1;
	}
	reply("ready %ld 0x%" PRIxPTR, (long)getpid(), (uintptr_t)map_addr);
	uint64_t start = monotonic_ms(), n = 0;
	for (;;) {
		uint64_t now = monotonic_ms(), wait;
		if (life_ms && now - start >= life_ms)
			break;
		wait = every_ms ? every_ms : 1000;
		if (life_ms && life_ms - (now - start) < wait)
			wait = life_ms - (now - start);
		sleep_ms(wait);
		if (every_ms && (!life_ms || monotonic_ms() - start < life_ms)) {
			if (service_payload(&b, service, ++n) != 0 || (msg = do_update(b.p, b.len)) != NULL) {
				fprintf(stderr, "update: %s\n", msg ? msg : "out of memory");
				return 1;
			}
		}
	}
	free(b.p);
	return 0;
}

#define MAX_ARGS 8

int main(int argc, char **argv)
{
	const char *service = NULL;
	uint64_t life_ms = 0, every_ms = 0;
	int soak = 0, bad = 0;
	for (int i = 1; i < argc && !bad; i++) {
		uint64_t *num = NULL;
		if (strcmp(argv[i], "-separate") == 0 || strcmp(argv[i], "--separate") == 0)
			opt_separate = 1;
		else if (strcmp(argv[i], "-anon") == 0 || strcmp(argv[i], "--anon") == 0)
			opt_anon = 1;
		else if (strcmp(argv[i], "-service") == 0 && i + 1 < argc)
			service = argv[++i];
		else if (strcmp(argv[i], "-life") == 0)
			num = &life_ms, soak = 1;
		else if (strcmp(argv[i], "-update-every") == 0)
			num = &every_ms;
		else if (strcmp(argv[i], "-update-hold") == 0)
			num = &opt_update_hold_ms;
		else
			bad = 1;
		if (num != NULL && (i + 1 >= argc || parse_u64(argv[++i], UINT64_MAX / 2, num) != 0))
			bad = 1;
	}
	if (bad) {
		fprintf(stderr, "usage: %s [-separate] [-anon] [-life <ms> -service <name> [-update-every <ms>] [-update-hold <ms>]]\n", argv[0]);
		return 2;
	}
	if (soak || service != NULL) {
		if (!soak || service == NULL) {
			fprintf(stderr, "%s: -life and -service go together\n", argv[0]);
			return 2;
		}
		return soak_main(service, life_ms, every_ms);
	}

	reply("ready %ld", (long)getpid());

	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';

		char *args[MAX_ARGS + 1];
		int nargs = 0;
		char *save = NULL;
		char *cmd = strtok_r(line, " \t", &save);
		char *tok;
		while (nargs <= MAX_ARGS && (tok = strtok_r(NULL, " \t", &save)) != NULL)
			args[nargs++] = tok;

		if (cmd == NULL) {
			reply("err empty command");
		} else if (strcmp(cmd, "publish") == 0) {
			cmd_publish_update(0, nargs > 0 ? args[0] : NULL);
		} else if (strcmp(cmd, "update") == 0) {
			cmd_publish_update(1, nargs > 0 ? args[0] : NULL);
		} else if (strcmp(cmd, "unpublish") == 0) {
			const char *msg = do_unpublish();
			if (msg)
				reply("err %s", msg);
			else
				reply("ok");
		} else if (strcmp(cmd, "header") == 0) {
			cmd_header(args, nargs);
		} else if (strcmp(cmd, "spin") == 0) {
			cmd_spin(nargs > 0 ? args[0] : NULL);
		} else if (strcmp(cmd, "stall") == 0) {
			cmd_stall(nargs > 0 ? args[0] : NULL);
		} else if (strcmp(cmd, "unstall") == 0) {
			cmd_unstall();
		} else if (strcmp(cmd, "fork") == 0) {
			cmd_fork();
		} else if (strcmp(cmd, "exit") == 0) {
			reply("ok");
			free(line);
			_exit(0);
		} else {
			reply("err unknown command %s", cmd);
		}
	}
	free(line);
	return 0;
}

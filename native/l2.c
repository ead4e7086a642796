/*
 * metallb-ts L2 raw sockets: a small N-API addon (ABI-stable; loads on Node 20 and 24 alike).
 * It only moves bytes; every decision (what to answer, when, which interface) is made in TypeScript
 * (src/core/arp). Two socket kinds:
 *   - ARP: AF_PACKET/SOCK_RAW bound to one interface and ETH_P_ARP. No PACKET_MR_PROMISC:
 *     the interface stays out of promiscuous mode; broadcasts and frames to our MAC are enough.
 *   - NDP: AF_INET6/SOCK_RAW/IPPROTO_ICMPV6 bound to the interface's link-local address (the
 *     source MetalLB answers from), hop limit 255 for unicast and multicast (RFC 4861 7.1.2),
 *     an ICMPv6 filter passing only neighbor solicitations; the kernel computes the checksum.
 *     Solicited-node multicast groups are joined per announced address (join/leave).
 * A third kind, netlink: an AF_NETLINK/NETLINK_ROUTE socket subscribed to RTMGRP_LINK,
 * RTMGRP_IPV4_IFADDR and RTMGRP_IPV6_IFADDR; every message (and a receive-buffer overflow,
 * ENOBUFS, which means messages were lost) calls back so TypeScript rescans the interfaces.
 * Receiving: a libuv poll handle on the non-blocking socket drains it and calls back into JS
 * with (frame: Buffer, source: Buffer, hopLimit: number) per datagram (hopLimit -1 for ARP). Outgoing frames that AF_PACKET echoes
 * back (PACKET_OUTGOING) are skipped here.
 * Errors: a failing syscall throws a JS Error whose `code` is the errno name ("EPERM", ...).
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <uv.h>
#include <errno.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/icmp6.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#define CHECK(call) do { if ((call) != napi_ok) { napi_throw_error(env, NULL, #call " failed"); return NULL; } } while (0)

typedef struct {
  uv_poll_t poll;
  napi_env env;
  napi_ref cb;
  napi_async_context ctx;
  int fd;
  int stopped; /* stop() was called (possibly from inside the callback): receive nothing more */
  int kind; /* 0 ARP (AF_PACKET), 1 NDP (ICMPv6), 2 netlink (NETLINK_ROUTE link/address changes) */
} watch_t;

static const char *errno_name(int e) {
  switch (e) {
    case EPERM: return "EPERM"; case EACCES: return "EACCES"; case EINVAL: return "EINVAL";
    case ENODEV: return "ENODEV"; case EADDRNOTAVAIL: return "EADDRNOTAVAIL"; case EBADF: return "EBADF";
    case ENETDOWN: return "ENETDOWN"; case ENXIO: return "ENXIO"; case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case ENOBUFS: return "ENOBUFS"; case EADDRINUSE: return "EADDRINUSE"; case ENETUNREACH: return "ENETUNREACH";
    default: return "EUNKNOWN";
  }
}

static napi_value throw_errno(napi_env env, const char *what) {
  int e = errno;
  char msg[256];
  snprintf(msg, sizeof msg, "%s: %s", what, strerror(e));
  napi_value m, c, err;
  napi_create_string_utf8(env, msg, NAPI_AUTO_LENGTH, &m);
  napi_create_string_utf8(env, errno_name(e), NAPI_AUTO_LENGTH, &c);
  napi_create_error(env, c, m, &err);
  napi_throw(env, err);
  return NULL;
}

static int arg_int(napi_env env, napi_value v, int32_t *out) { return napi_get_value_int32(env, v, out) == napi_ok; }

static int arg_buf(napi_env env, napi_value v, void **data, size_t *len) {
  bool ok = false;
  napi_is_buffer(env, v, &ok);
  if (!ok) return 0;
  return napi_get_buffer_info(env, v, data, len) == napi_ok;
}

/* openArp(ifindex) -> fd */
static napi_value open_arp(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1]; int32_t ifindex;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || !arg_int(env, argv[0], &ifindex)) { napi_throw_type_error(env, NULL, "openArp(ifindex)"); return NULL; }
  int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ARP));
  if (fd < 0) return throw_errno(env, "socket(AF_PACKET, SOCK_RAW, ETH_P_ARP)");
  struct sockaddr_ll sll; memset(&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET; sll.sll_protocol = htons(ETH_P_ARP); sll.sll_ifindex = ifindex;
  if (bind(fd, (struct sockaddr *)&sll, sizeof sll) < 0) { napi_value r = throw_errno(env, "bind(AF_PACKET)"); close(fd); return r; }
  napi_value out; CHECK(napi_create_int32(env, fd, &out)); return out;
}

/* openNetlink() -> fd: NETLINK_ROUTE, subscribed to link and IPv4/IPv6 address changes. */
static napi_value open_netlink(napi_env env, napi_callback_info info) {
  int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return throw_errno(env, "socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)");
  struct sockaddr_nl snl; memset(&snl, 0, sizeof snl);
  snl.nl_family = AF_NETLINK; snl.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (bind(fd, (struct sockaddr *)&snl, sizeof snl) < 0) { napi_value r = throw_errno(env, "bind(AF_NETLINK)"); close(fd); return r; }
  napi_value out; CHECK(napi_create_int32(env, fd, &out)); return out;
}

/* openNdp(ifindex, linkLocal: Buffer(16)) -> fd */
static napi_value open_ndp(napi_env env, napi_callback_info info) {
  size_t argc = 2; napi_value argv[2]; int32_t ifindex; void *addr; size_t alen;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 2 || !arg_int(env, argv[0], &ifindex) || !arg_buf(env, argv[1], &addr, &alen) || alen != 16) {
    napi_throw_type_error(env, NULL, "openNdp(ifindex, linkLocal: Buffer(16))"); return NULL;
  }
  int fd = socket(AF_INET6, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_ICMPV6);
  if (fd < 0) return throw_errno(env, "socket(AF_INET6, SOCK_RAW, IPPROTO_ICMPV6)");
  int hops = 255, off = 0, on = 1;
  struct icmp6_filter filt;
  ICMP6_FILTER_SETBLOCKALL(&filt);
  ICMP6_FILTER_SETPASS(ND_NEIGHBOR_SOLICIT, &filt);
  struct sockaddr_in6 sa; memset(&sa, 0, sizeof sa);
  sa.sin6_family = AF_INET6; sa.sin6_scope_id = (uint32_t)ifindex; memcpy(&sa.sin6_addr, addr, 16);
  const char *what = NULL;
  if (setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &hops, sizeof hops) < 0) what = "IPV6_UNICAST_HOPS";
  else if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS, &hops, sizeof hops) < 0) what = "IPV6_MULTICAST_HOPS";
  else if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_LOOP, &off, sizeof off) < 0) what = "IPV6_MULTICAST_LOOP";
  else if (setsockopt(fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, &ifindex, sizeof ifindex) < 0) what = "IPV6_MULTICAST_IF";
  else if (setsockopt(fd, IPPROTO_ICMPV6, ICMP6_FILTER, &filt, sizeof filt) < 0) what = "ICMP6_FILTER";
  else if (setsockopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, &on, sizeof on) < 0) what = "IPV6_RECVHOPLIMIT";
  else if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0) what = "bind(link-local address)";
  if (what) { napi_value r = throw_errno(env, what); close(fd); return r; }
  napi_value out; CHECK(napi_create_int32(env, fd, &out)); return out;
}

/* joinGroup(fd, ifindex, group: Buffer(16), join: boolean) */
static napi_value group(napi_env env, napi_callback_info info) {
  size_t argc = 4; napi_value argv[4]; int32_t fd, ifindex; void *addr; size_t alen; bool join;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4 || !arg_int(env, argv[0], &fd) || !arg_int(env, argv[1], &ifindex) || !arg_buf(env, argv[2], &addr, &alen) || alen != 16
      || napi_get_value_bool(env, argv[3], &join) != napi_ok) {
    napi_throw_type_error(env, NULL, "group(fd, ifindex, group: Buffer(16), join: boolean)"); return NULL;
  }
  struct ipv6_mreq mr; memcpy(&mr.ipv6mr_multiaddr, addr, 16); mr.ipv6mr_interface = (unsigned)ifindex;
  if (setsockopt(fd, IPPROTO_IPV6, join ? IPV6_JOIN_GROUP : IPV6_LEAVE_GROUP, &mr, sizeof mr) < 0)
    return throw_errno(env, join ? "IPV6_JOIN_GROUP" : "IPV6_LEAVE_GROUP");
  return NULL;
}

/* sendArp(fd, ifindex, frame: Buffer) : the Ethernet frame as built by the codec (destination MAC first). */
static napi_value send_arp(napi_env env, napi_callback_info info) {
  size_t argc = 3; napi_value argv[3]; int32_t fd, ifindex; void *data; size_t len;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 3 || !arg_int(env, argv[0], &fd) || !arg_int(env, argv[1], &ifindex) || !arg_buf(env, argv[2], &data, &len) || len < 14) {
    napi_throw_type_error(env, NULL, "sendArp(fd, ifindex, frame: Buffer)"); return NULL;
  }
  struct sockaddr_ll sll; memset(&sll, 0, sizeof sll);
  sll.sll_family = AF_PACKET; sll.sll_protocol = htons(ETH_P_ARP); sll.sll_ifindex = ifindex;
  sll.sll_halen = 6; memcpy(sll.sll_addr, data, 6);
  if (sendto(fd, data, len, 0, (struct sockaddr *)&sll, sizeof sll) < 0) return throw_errno(env, "sendto(AF_PACKET)");
  return NULL;
}

/* sendNdp(fd, ifindex, destination: Buffer(16), icmp: Buffer) : the ICMPv6 message (checksum by the kernel). */
static napi_value send_ndp(napi_env env, napi_callback_info info) {
  size_t argc = 4; napi_value argv[4]; int32_t fd, ifindex; void *dst, *data; size_t dlen, len;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 4 || !arg_int(env, argv[0], &fd) || !arg_int(env, argv[1], &ifindex) || !arg_buf(env, argv[2], &dst, &dlen) || dlen != 16
      || !arg_buf(env, argv[3], &data, &len)) {
    napi_throw_type_error(env, NULL, "sendNdp(fd, ifindex, destination: Buffer(16), icmp: Buffer)"); return NULL;
  }
  struct sockaddr_in6 sa; memset(&sa, 0, sizeof sa);
  sa.sin6_family = AF_INET6; sa.sin6_scope_id = (uint32_t)ifindex; memcpy(&sa.sin6_addr, dst, 16);
  if (sendto(fd, data, len, 0, (struct sockaddr *)&sa, sizeof sa) < 0) return throw_errno(env, "sendto(ICMPv6)");
  return NULL;
}

static void on_readable(uv_poll_t *h, int status, int events) {
  (void)events;
  watch_t *w = (watch_t *)h->data;
  napi_env env = w->env;
  if (status < 0) return;
  unsigned char buf[2048];
  for (int n = 0; n < 64 && !w->stopped; n++) {
    union { struct sockaddr_ll ll; struct sockaddr_in6 in6; struct sockaddr_nl nl; } from;
    union { struct cmsghdr align; char buf[CMSG_SPACE(sizeof(int))]; } control;
    struct iovec iov = { buf, sizeof buf };
    struct msghdr mh; memset(&mh, 0, sizeof mh);
    mh.msg_name = &from; mh.msg_namelen = sizeof from; mh.msg_iov = &iov; mh.msg_iovlen = 1;
    mh.msg_control = control.buf; mh.msg_controllen = sizeof control.buf;
    ssize_t r = recvmsg(w->fd, &mh, MSG_TRUNC);
    if (r < 0) {
      if (w->kind == 2 && errno == ENOBUFS) r = 0; /* netlink overflow: changes were lost, call back (empty) so JS rescans */
      else return; /* EAGAIN or a transient error: wait for the next readiness */
    }
    int hop_limit = -1; /* NDP: the IPv6 hop limit the message arrived with (RFC 4861 7.1.1 wants 255) */
    if (w->kind == 1) for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
      if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_HOPLIMIT) memcpy(&hop_limit, CMSG_DATA(c), sizeof hop_limit);
    if (w->kind == 0 && from.ll.sll_pkttype == PACKET_OUTGOING) continue;
    size_t len = (size_t)r > sizeof buf ? sizeof buf : (size_t)r; /* truncated: the codec sees the short frame */
    napi_handle_scope scope;
    if (napi_open_handle_scope(env, &scope) != napi_ok) return;
    napi_value cb, recv, argv[3], result; void *copy;
    napi_get_reference_value(env, w->cb, &cb);
    napi_get_global(env, &recv); /* napi_make_callback needs an object receiver */
    napi_create_buffer_copy(env, len, buf, &copy, &argv[0]);
    if (w->kind == 1) napi_create_buffer_copy(env, 16, &from.in6.sin6_addr, &copy, &argv[1]);
    else if (w->kind == 2) napi_create_buffer_copy(env, 0, buf, &copy, &argv[1]);
    else napi_create_buffer_copy(env, 6, from.ll.sll_addr, &copy, &argv[1]);
    napi_create_int32(env, hop_limit, &argv[2]);
    napi_status st = napi_make_callback(env, w->ctx, recv, cb, 3, argv, &result);
    if (st == napi_pending_exception) {
      napi_value exc; napi_get_and_clear_last_exception(env, &exc); napi_fatal_exception(env, exc);
    }
    napi_close_handle_scope(env, scope);
  }
}

static void on_close(uv_handle_t *h) {
  watch_t *w = (watch_t *)h->data;
  close(w->fd);
  free(w);
}

static void finalize_watch(napi_env env, void *data, void *hint) { (void)env; (void)data; (void)hint; }

/* watch(fd, kind: 0 ARP | 1 NDP | 2 netlink, onFrame(frame, source, hopLimit)) -> handle; stop(handle) closes the socket. */
static napi_value watch(napi_env env, napi_callback_info info) {
  size_t argc = 3; napi_value argv[3]; int32_t fd, kind;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  napi_valuetype t = napi_undefined;
  if (argc == 3) napi_typeof(env, argv[2], &t);
  if (argc < 3 || !arg_int(env, argv[0], &fd) || !arg_int(env, argv[1], &kind) || t != napi_function) {
    napi_throw_type_error(env, NULL, "watch(fd, kind, onFrame)"); return NULL;
  }
  uv_loop_t *loop; CHECK(napi_get_uv_event_loop(env, &loop));
  watch_t *w = calloc(1, sizeof *w);
  w->env = env; w->fd = fd; w->kind = kind;
  napi_create_reference(env, argv[2], 1, &w->cb);
  napi_value name; napi_create_string_utf8(env, "metallb-ts:l2", NAPI_AUTO_LENGTH, &name);
  napi_async_init(env, NULL, name, &w->ctx);
  if (uv_poll_init(loop, &w->poll, fd) != 0) { free(w); napi_throw_error(env, "EINVAL", "uv_poll_init failed"); return NULL; }
  w->poll.data = w;
  uv_poll_start(&w->poll, UV_READABLE, on_readable);
  napi_value ext; CHECK(napi_create_external(env, w, finalize_watch, NULL, &ext));
  return ext;
}

static napi_value stop(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1]; void *p;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) { napi_throw_type_error(env, NULL, "stop(handle)"); return NULL; }
  watch_t *w = (watch_t *)p;
  if (w->stopped) return NULL;
  w->stopped = 1;
  uv_poll_stop(&w->poll);
  napi_delete_reference(env, w->cb);
  napi_async_destroy(env, w->ctx);
  uv_close((uv_handle_t *)&w->poll, on_close);
  return NULL;
}

/* unref(handle): the poll handle alone does not keep the process alive. */
static napi_value unref(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1]; void *p;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || napi_get_value_external(env, argv[0], &p) != napi_ok || !p) { napi_throw_type_error(env, NULL, "unref(handle)"); return NULL; }
  uv_unref((uv_handle_t *)&((watch_t *)p)->poll);
  return NULL;
}

/* closeFd(fd): for a socket that was opened but never watched. */
static napi_value close_fd(napi_env env, napi_callback_info info) {
  size_t argc = 1; napi_value argv[1]; int32_t fd;
  CHECK(napi_get_cb_info(env, info, &argc, argv, NULL, NULL));
  if (argc < 1 || !arg_int(env, argv[0], &fd)) { napi_throw_type_error(env, NULL, "closeFd(fd)"); return NULL; }
  close(fd);
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
    { "openArp", NULL, open_arp, NULL, NULL, NULL, napi_enumerable, NULL },
    { "openNetlink", NULL, open_netlink, NULL, NULL, NULL, napi_enumerable, NULL },
    { "openNdp", NULL, open_ndp, NULL, NULL, NULL, napi_enumerable, NULL },
    { "group", NULL, group, NULL, NULL, NULL, napi_enumerable, NULL },
    { "sendArp", NULL, send_arp, NULL, NULL, NULL, napi_enumerable, NULL },
    { "sendNdp", NULL, send_ndp, NULL, NULL, NULL, napi_enumerable, NULL },
    { "watch", NULL, watch, NULL, NULL, NULL, napi_enumerable, NULL },
    { "stop", NULL, stop, NULL, NULL, NULL, napi_enumerable, NULL },
    { "unref", NULL, unref, NULL, NULL, NULL, napi_enumerable, NULL },
    { "closeFd", NULL, close_fd, NULL, NULL, NULL, napi_enumerable, NULL },
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)

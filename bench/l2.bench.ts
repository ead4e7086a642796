/**
 * `npm run bench l2`: the L2 data plane in the network-namespace testbed of
 * test/integration/l2-netns.test.ts (root needed). Prints
 *   - reply latency over 1,000 ARP requests (sent one at a time from the client namespace by the
 *     test file's AF_PACKET client; iputils arping cannot send faster than one per second):
 *     in the responder, request seen to reply sent (JS callback entry to sendto() returned), and
 *     the client's round trip (kernel, bridge and both sockets included);
 *   - the same for 100 NDP solicitations (the client's neighbor entry flushed before each UDP
 *     send), responder side only;
 *   - failover time: new speaker announces → client neighbor entry shows its MAC (median of 5).
 */
import { L2Testbed, Harness, arpRoundTrips, measureFailover, sh, speakerMac } from '../test/integration/l2-netns.test.ts';

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (ms: number) => `${ms.toFixed(3)} ms`;

const bed = new L2Testbed(`mltsb${process.pid}`, 2);
const hs: Harness[] = [];
process.once('exit', () => bed.destroy());
try {
  bed.destroy();
  bed.create();
  bed.speakers.forEach((ns, i) => {
    hs.push(new Harness(ns, i === bed.speakers.length - 1 ? ['^ex.*'] : []));
  }); // the last one has ex0/dn0
  await Promise.all(hs.map((h) => h.ready()));
  const [a, b] = hs as [Harness, Harness];

  // ARP: 1,000 requests
  a.announce('bench/arp', ['192.0.2.10']);
  await new Promise((r) => setTimeout(r, 200));
  const from = a.lines.length;
  const rtt = arpRoundTrips(bed, '192.0.2.10', 1000);
  await new Promise((r) => setTimeout(r, 300)); // the synchronous client blocked the harness output reader
  const handled = a.lines.slice(from).flatMap((l) => ('kind' in l && l.kind === 'reply' && l.protocol === 'arp' ? [l.handlingNs / 1e6] : []));
  console.log(`l2 ARP replies: ${rtt.length}/1000 answered`);
  console.log(`l2 ARP reply latency (request seen to reply sent, in the responder): median ${fmt(pct(handled, 50))}, p99 ${fmt(pct(handled, 99))}`);
  console.log(`l2 ARP round trip (AF_PACKET client in the client namespace, one request at a time): median ${fmt(pct(rtt, 50))}, p99 ${fmt(pct(rtt, 99))}`);

  // NDP: 100 solicitations (the client's entry flushed before each UDP send)
  a.announce('bench/ndp', ['2001:db8::10']);
  await new Promise((r) => setTimeout(r, 200));
  const from6 = a.lines.length;
  for (let i = 0; i < 100; i++) {
    sh('ip', '-n', bed.client, '-6', 'neigh', 'flush', 'dev', 'eth0');
    bed.udp('2001:db8::10');
  }
  await new Promise((r) => setTimeout(r, 300));
  const handled6 = a.lines.slice(from6).flatMap((l) => ('kind' in l && l.kind === 'reply' && l.protocol === 'ndp' ? [l.handlingNs / 1e6] : []));
  console.log(`l2 NDP reply latency (request seen to reply sent, ${handled6.length} solicitations): median ${fmt(pct(handled6, 50))}, p99 ${fmt(pct(handled6, 99))}`);

  // Failover, 5 times back and forth
  const times: number[] = [];
  a.announce('bench/failover', ['192.0.2.40']);
  bed.udp('192.0.2.40');
  let cur = a,
    next = b;
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 1200)); // past the client's neighbor locktime (1 s)
    times.push(await measureFailover(bed, cur, next, '192.0.2.40', 'bench/failover'));
    [cur, next] = [next, cur];
  }
  console.log(
    `l2 failover (new speaker announces → client neighbor entry has its MAC, ${speakerMac(1)} ⇄ ${speakerMac(2)}): median ${fmt(pct(times, 50))}, max ${fmt(Math.max(...times))} (seen by ip monitor neigh in the client)`,
  );
} finally {
  await Promise.all(hs.map((h) => h.stop()));
  bed.destroy();
}

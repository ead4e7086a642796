#!/usr/bin/env bash
# Debian's FRR (8.4.4 on bookworm) for the BGP test bed (test/integration/setup/frr.ts):
#   frr              zebra, bgpd, bfdd, staticd (/usr/lib/frr), vtysh
#   frr-pythontools  /usr/lib/frr/frr-reload.py, which frr-k8s's reloader script calls
# plus util-linux's unshare and iproute2's ip (normally present already).
# Idempotent: installs only what is missing, runs `apt-get update` at most once. Needs root (CI runs
# it as root).
#
# The tests start FRR themselves, inside network namespaces, with every path on the command line. The
# package must therefore leave no FRR daemon running on the host: service starts are refused while
# installing (a temporary policy-rc.d, when the machine has none), and afterwards the frr systemd unit
# is stopped and disabled when systemd runs this machine (the project's machines have no systemd: PID 1 is another init,
# and Debian's /etc/init.d/frr is not run by the package either). An FRR the machine already had is left alone.
set -euo pipefail

missing=()
[ -x /usr/lib/frr/bgpd ] && [ -x /usr/lib/frr/zebra ] && [ -x /usr/lib/frr/bfdd ] && [ -x /usr/lib/frr/staticd ] &&
  command -v vtysh >/dev/null 2>&1 || missing+=(frr)
[ -f /usr/lib/frr/frr-reload.py ] || missing+=(frr-pythontools)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
command -v flock >/dev/null 2>&1 || missing+=(util-linux)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)

host_frr_pids() { # FRR daemons in the host's network namespace (a test bed's run in their own netns)
  local host_netns pid d
  host_netns="$(readlink /proc/1/ns/net)"
  # one name per pgrep: pgrep refuses patterns longer than 15 characters (the kernel's comm length)
  for d in zebra bgpd bfdd staticd watchfrr mgmtd ospfd ospf6d ripd isisd pimd ldpd; do
    for pid in $(pgrep -x "$d" || true); do
      [ "$(readlink "/proc/$pid/ns/net" 2>/dev/null)" = "$host_netns" ] && echo "$pid"
    done
  done
  return 0
}

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "40-frr: need root to install ${missing[*]}" >&2
  exit 1
fi

# Refuse service starts during the install (invoke-rc.d and deb-systemd-invoke honour policy-rc.d),
# unless the machine already has its own policy.
policy=/usr/sbin/policy-rc.d
own_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\n# temporary, written by metallb-ts test/setup.d/40-frr.sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  own_policy=1
  trap '[ "$own_policy" = 1 ] && rm -f "$policy"' EXIT
fi
installing_frr=0
case " ${missing[*]} " in *" frr "*) installing_frr=1 ;; esac

export DEBIAN_FRONTEND=noninteractive
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
echo "[40-frr] installing ${missing[*]}" >&2
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "$installing_frr" = 1 ]; then
  # The package enables frr.service for the next boot (policy-rc.d only prevents the start now): the
  # tests need it off. Without systemd (containers, VMs with another init) nothing is enabled; stop
  # whatever the package's init script may have started all the same.
  if [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
    systemctl disable --now frr.service >/dev/null 2>&1 || true
  elif [ -n "$(host_frr_pids)" ] && [ -x /usr/lib/frr/frrinit.sh ]; then
    /usr/lib/frr/frrinit.sh stop >/dev/null 2>&1 || true
  fi
  left="$(host_frr_pids | tr '\n' ' ')"
  if [ -n "$left" ]; then
    echo "40-frr: FRR daemons run on the host after the install (pids $left); stop them, the BGP tests must not touch the host network" >&2
    exit 1
  fi
fi
dpkg-query -W -f='[40-frr] ${Package} ${Version}\n' frr frr-pythontools >&2

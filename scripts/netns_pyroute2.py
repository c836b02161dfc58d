#!/usr/bin/env python3
"""The `ip` (iproute2) steps of scripts/netns-hosts and tests/netns/netns_job.sh, done with pyroute2 instead, for
machines without `ip` (the GPU machine's image). pyroute2 is pure Python: put its wheel on PYTHONPATH
(`PYTHONPATH=.whl/pyroute2-0.9.7-py3-none-any.whl`; netns-hosts does that when it finds one).

Usage: netns_pyroute2.py COMMAND ARGS...
  check                          pyroute2 is on the path (found, not imported: that is slow): exit 0, else 1
  make NS0 NS1 A B DEV CIDR0 CIDR1
                                 all of netns-hosts' set-up in one process: add NS0 and NS1, veth A <-> B, setup
                                 NS0 A DEV CIDR0 and NS1 B DEV CIDR1, then wait (at most 5 s) for both carriers;
                                 exit 77 when the namespaces or the veth pair cannot be made (not permitted here)
  add NS                         create the named network namespace NS (/run/netns/NS)
  del NS...                      delete them (their veth goes with them)
  pids NS                        the PIDs whose network namespace is NS, one per line
  veth A B                       create a veth pair A <-> B in the current namespace
  setup NS IFACE DEV ADDR/PLEN   move IFACE into NS, rename it DEV, give it ADDR/PLEN, set lo and DEV up
  carrier NS DEV                 exit 0 when DEV in NS has its carrier (IFF_LOWER_UP), 1 when not
  linkdel IFACE                  delete IFACE in the current namespace
  linkdown DEV                   set DEV down in the current namespace (netns_job.sh --link-down)
Exit status: 0 on success, 1 with the reason on stderr (77 for `make`, see there), 2 on bad usage.
"""
import os
import sys
import time

NETNS_DIR = "/run/netns"
IFF_LOWER_UP = 0x10000


def fail(msg, status=1):
    print(f"netns_pyroute2: {msg}", file=sys.stderr)
    sys.exit(status)


def index_of(ipr, name):
    found = ipr.link_lookup(ifname=name)
    if not found:
        fail(f"no interface named {name}")
    return found[0]


def open_ns(NetNS, name):
    """NetNS of an existing namespace (pyroute2 would create a missing one: flags=0 turns that off)."""
    if not os.path.exists(os.path.join(NETNS_DIR, name)):
        fail(f"no namespace {name} in {NETNS_DIR}")
    return NetNS(name, flags=0)


def ns_pids(name):
    """PIDs whose /proc/PID/ns/net is the namespace bound at /run/netns/NAME (same device and inode)."""
    try:
        st = os.stat(os.path.join(NETNS_DIR, name))
    except OSError as e:
        fail(f"no namespace {name}: {e.strerror}")
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            s = os.stat(f"/proc/{entry}/ns/net")
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if (s.st_dev, s.st_ino) == (st.st_dev, st.st_ino):
            pids.append(int(entry))
    return pids


def main(argv):
    if len(argv) < 1:
        print(__doc__, file=sys.stderr)
        return 2
    cmd, args = argv[0], argv[1:]
    arity = {"check": 0, "make": 7, "add": 1, "pids": 1, "veth": 2, "setup": 4, "carrier": 2, "linkdel": 1,
             "linkdown": 1}
    if cmd not in arity and cmd != "del" or cmd == "del" and not args or cmd in arity and len(args) != arity[cmd]:
        print(f"netns_pyroute2: bad usage: {' '.join(argv)}\n{__doc__}", file=sys.stderr)
        return 2
    if cmd == "check":
        import importlib.util
        if importlib.util.find_spec("pyroute2") is None:
            fail(f"no pyroute2 on the path; PYTHONPATH={os.environ.get('PYTHONPATH', '')}")
        return 0
    if cmd == "pids":  # no pyroute2 needed
        for pid in ns_pids(args[0]):
            print(pid)
        return 0
    try:
        from pyroute2 import IPRoute, NetNS, netns
    except ImportError as e:
        fail(f"cannot import pyroute2 ({e}); PYTHONPATH={os.environ.get('PYTHONPATH', '')}")
    def setup(name, iface, dev, cidr):
        addr, _, plen = cidr.partition("/")
        with IPRoute() as ipr:
            ipr.link("set", index=index_of(ipr, iface), net_ns_fd=name)
        with open_ns(NetNS, name) as ns:
            ns.link("set", index=index_of(ns, iface), ifname=dev)
            idx = index_of(ns, dev)
            ns.addr("add", index=idx, address=addr, prefixlen=int(plen or 24))
            ns.link("set", index=index_of(ns, "lo"), state="up")
            ns.link("set", index=idx, state="up")

    def carrier(name, dev):
        with open_ns(NetNS, name) as ns:
            return bool(ns.get_links(index_of(ns, dev))[0]["flags"] & IFF_LOWER_UP)

    try:
        if cmd == "make":
            ns0, ns1, a, b, dev, cidr0, cidr1 = args
            for name in (ns0, ns1):
                try:
                    netns.create(name)
                except Exception as e:
                    fail(f"cannot create a network namespace ({name}): {type(e).__name__}: {e}", 77)
            try:
                with IPRoute() as ipr:
                    ipr.link("add", ifname=a, kind="veth", peer=b)
            except Exception as e:
                fail(f"cannot create a veth pair: {type(e).__name__}: {e}", 77)
            setup(ns0, a, dev, cidr0)
            setup(ns1, b, dev, cidr1)
            deadline = time.monotonic() + 5  # the carrier comes within milliseconds
            while not (carrier(ns0, dev) and carrier(ns1, dev)):
                if time.monotonic() > deadline:
                    fail("the veth pair did not come up within 5 s")
                time.sleep(0.05)
        elif cmd == "add":
            netns.create(args[0])
        elif cmd == "del":
            for name in args:
                netns.remove(name)
        elif cmd == "veth":
            with IPRoute() as ipr:
                ipr.link("add", ifname=args[0], kind="veth", peer=args[1])
        elif cmd == "setup":
            setup(*args)
        elif cmd == "carrier":
            return 0 if carrier(*args) else 1
        elif cmd == "linkdel":
            with IPRoute() as ipr:
                ipr.link("del", index=index_of(ipr, args[0]))
        elif cmd == "linkdown":
            with IPRoute() as ipr:
                ipr.link("set", index=index_of(ipr, args[0]), state="down")
    except Exception as e:  # pyroute2's NetlinkError and OSError carry the kernel's reason
        fail(f"{cmd} {' '.join(args)}: {type(e).__name__}: {e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

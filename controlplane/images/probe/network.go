package main

import (
	"net"
	"os"
	"strings"
)

// network is what `probe net` reports: the pod's interfaces with their MAC and every address (IPv6 ones
// included: link-local addresses are what NetworkPolicy engines that filter IPv4 alone never see), the kernel's
// IPv6 switch for the namespace, and the IPv4 neighbours the pod has learned (ARP): a MAC is enough to know a
// neighbour's EUI-64 link-local address. It also tries to switch IPv6 back on (0 into all.disable_ipv6), as an
// instance's code could, and says what the kernel answered ("" if the write went through).
func network() map[string]any {
	interfaces := []map[string]any{}
	links, _ := net.Interfaces()
	for _, link := range links {
		addresses := []string{}
		if addrs, err := link.Addrs(); err == nil {
			for _, addr := range addrs {
				addresses = append(addresses, addr.String())
			}
		}
		interfaces = append(interfaces, map[string]any{"name": link.Name, "mac": link.HardwareAddr.String(), "addresses": addresses})
	}
	// "absent": the kernel has no IPv6 at all (booted with ipv6.disable=1), so no such setting.
	disabled := map[string]string{}
	for _, conf := range []string{"all", "default", "eth0"} {
		value, err := os.ReadFile("/proc/sys/net/ipv6/conf/" + conf + "/disable_ipv6")
		if err != nil {
			disabled[conf] = "absent"
		} else {
			disabled[conf] = strings.TrimSpace(string(value))
		}
	}
	switchOn := ""
	if err := os.WriteFile("/proc/sys/net/ipv6/conf/all/disable_ipv6", []byte("0"), 0o644); err != nil {
		switchOn = err.Error()
	}
	return map[string]any{"interfaces": interfaces, "disableIPv6": disabled, "switchOn": switchOn, "neighbours": neighbours()}
}

// neighbours reads /proc/net/arp: IPv4 address -> MAC, for complete entries (flags 0x2).
func neighbours() map[string]string {
	found := map[string]string{}
	text, err := os.ReadFile("/proc/net/arp")
	if err != nil {
		return found
	}
	// IP address  HW type  Flags  HW address  Mask  Device
	for _, line := range strings.Split(string(text), "\n")[1:] {
		fields := strings.Fields(line)
		if len(fields) >= 4 && fields[2] == "0x2" {
			found[fields[0]] = fields[3]
		}
	}
	return found
}

//! Which addresses a fetch may connect to: public ones. Loopback, private, link-local (the
//! cloud metadata service, `169.254.169.254`, among them), unique-local, shared (carrier NAT),
//! multicast, broadcast and unspecified addresses reach the machine zero runs on or its
//! network, which a page the model names must not: an allow rule that names the address
//! exactly is the only way there. An IPv4 address inside an IPv6 one (mapped, NAT64) is judged
//! as the IPv4 address it carries.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `address` is not one a fetch connects to by itself (`None`: it is public).
pub(super) fn forbidden(address: IpAddr) -> Option<&'static str> {
    match address {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => forbidden_v4(v4),
            None => forbidden_v6(v6),
        },
    }
}

/// Whether `address` is one of `named` (an allow rule's), an IPv4 address inside an IPv6 one
/// counting as itself.
pub(super) fn is_named(address: IpAddr, named: &[IpAddr]) -> bool {
    let plain = |address: IpAddr| match address {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    };
    named.iter().any(|named| plain(*named) == plain(address))
}

fn forbidden_v4(v4: Ipv4Addr) -> Option<&'static str> {
    let [first, second, ..] = v4.octets();
    Some(if v4.is_loopback() {
        "a loopback address"
    } else if v4.is_private() {
        "a private address"
    } else if v4.is_link_local() {
        "a link-local address (the cloud metadata service's among them)"
    } else if first == 100 && (64..128).contains(&second) {
        "a shared (carrier NAT) address"
    } else if first == 0 || v4.is_unspecified() {
        "an unspecified address"
    } else if v4.is_multicast() || v4.is_broadcast() || first >= 240 {
        "a multicast, broadcast or reserved address"
    } else {
        return None;
    })
}

fn forbidden_v6(v6: Ipv6Addr) -> Option<&'static str> {
    let first = v6.segments()[0];
    Some(if v6.is_loopback() {
        "a loopback address"
    } else if v6.is_unspecified() {
        "an unspecified address"
    } else if v6.is_unicast_link_local() || first & 0xffc0 == 0xfec0 {
        "a link-local or site-local address"
    } else if v6.is_unique_local() {
        "a unique-local address"
    } else if v6.is_multicast() {
        "a multicast address"
    } else {
        return None;
    })
}

/// The IPv4 address an IPv6 one carries: mapped (`::ffff:a.b.c.d`), compatible
/// (`::a.b.c.d`, not `::` or `::1`) or NAT64's well-known prefix (`64:ff9b::/96`).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let segments = v6.segments();
    let low = Ipv4Addr::from(((segments[6] as u32) << 16) | segments[7] as u32);
    let nat64 = segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    let compatible = segments[..6] == [0; 6] && u32::from(low) > 1;
    (nat64 || compatible).then_some(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(text: &str) -> Option<&'static str> {
        forbidden(text.parse().unwrap())
    }

    #[test]
    fn the_machines_and_its_networks_addresses_are_forbidden() {
        for address in [
            "127.0.0.1",
            "127.9.9.9",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::10.0.0.1",
        ] {
            assert!(judged(address).is_some(), "{address}");
        }
        assert_eq!(
            judged("169.254.169.254"),
            Some("a link-local address (the cloud metadata service's among them)")
        );
    }

    #[test]
    fn public_addresses_are_not() {
        for address in [
            "93.184.215.14",
            "1.1.1.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(judged(address), None, "{address}");
        }
    }

    #[test]
    fn a_named_address_is_the_same_however_it_is_written() {
        let named: Vec<IpAddr> = vec!["127.0.0.1".parse().unwrap()];
        assert!(is_named("127.0.0.1".parse().unwrap(), &named));
        assert!(is_named("::ffff:127.0.0.1".parse().unwrap(), &named));
        assert!(!is_named("127.0.0.2".parse().unwrap(), &named));
        assert!(!is_named("::1".parse().unwrap(), &named));
    }
}

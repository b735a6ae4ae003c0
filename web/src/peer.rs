//! Which local account is at the other end of a loopback TCP connection, told once when the
//! connection is accepted (the guard refuses another account's: docs/web.md, "Security
//! model").
//!
//! On Linux the kernel answers for one socket through `NETLINK_SOCK_DIAG`
//! (`SOCK_DIAG_BY_FAMILY` with the socket's exact addresses and ports: linux/inet_diag.h,
//! `inet_diag_req_v2`, answered by an `inet_diag_msg` whose `idiag_uid` is the owner), a lookup
//! in the kernel's socket hash: microseconds. When netlink is not available (a sandbox that
//! forbids it), `/proc/net/tcp` or `tcp6` is read instead: the kernel writes that table by
//! walking every bucket of its socket hash, ~4 ms a read here whatever the number of sockets,
//! which is why the answer is kept with the connection and not asked again per request.

use std::net::{IpAddr, SocketAddr};

/// A connection's peer, with the owner of its socket when that is another local account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    /// The peer's address and port.
    pub addr: SocketAddr,
    /// The uid owning the peer's socket when it is a loopback connection of another account
    /// than this process's; `None` when it is this account's, not on loopback, or the owner
    /// cannot be told (not Linux, neither netlink nor `/proc/net` readable).
    pub foreign: Option<u32>,
}

impl
    axum::extract::connect_info::Connected<axum::serve::IncomingStream<'_, tokio::net::TcpListener>>
    for Peer
{
    fn connect_info(stream: axum::serve::IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        let addr = *stream.remote_addr();
        let foreign = stream
            .io()
            .local_addr()
            .ok()
            .and_then(|local| foreign_owner(addr, local));
        Peer { addr, foreign }
    }
}

/// The uid owning the socket at `peer` connected to `local` (this server's end), when `peer` is
/// on loopback and that uid is not this process's.
pub fn foreign_owner(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let peer = SocketAddr::new(peer.ip().to_canonical(), peer.port());
    if !peer.ip().is_loopback() {
        return None;
    }
    let local = SocketAddr::new(local.ip().to_canonical(), local.port());
    let owner = socket_owner(peer, local)?;
    // SAFETY: getuid has no preconditions and cannot fail.
    let me = unsafe { libc::getuid() };
    (owner != me).then_some(owner)
}

/// The uid owning the TCP socket whose own address is `src` and whose remote is `dst`: from
/// netlink, else from `/proc/net/tcp(6)`. `None` when no such socket is found or neither
/// source can be read.
pub fn socket_owner(src: SocketAddr, dst: SocketAddr) -> Option<u32> {
    match diag::owner(src, dst) {
        Ok(found) => found,
        Err(_) => proc_owner(src),
    }
}

/// The owner of the socket whose local address is `src`, from `/proc/net/tcp` or `tcp6`
/// (the kernel's text table: `sl local_address rem_address st … uid …`, addresses as the
/// in-memory words in hex, `ADDR:PORT`).
pub fn proc_owner(src: SocketAddr) -> Option<u32> {
    let (table, addr) = match src.ip() {
        IpAddr::V4(ip) => (
            "/proc/net/tcp",
            format!("{:08X}", u32::from_ne_bytes(ip.octets())),
        ),
        IpAddr::V6(ip) => (
            "/proc/net/tcp6",
            ip.octets()
                .chunks_exact(4)
                .map(|c| format!("{:08X}", u32::from_ne_bytes([c[0], c[1], c[2], c[3]])))
                .collect(),
        ),
    };
    let local = format!("{addr}:{:04X}", src.port());
    let text = std::fs::read_to_string(table).ok()?;
    text.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(1) == Some(&local.as_str()))
            .then(|| f.get(7)?.parse::<u32>().ok())
            .flatten()
    })
}

#[cfg(target_os = "linux")]
mod diag {
    //! One `SOCK_DIAG_BY_FAMILY` request for one socket (no dump).

    use std::io;
    use std::net::{IpAddr, SocketAddr};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    const NETLINK_SOCK_DIAG: libc::c_int = 4;
    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLM_F_REQUEST: u16 = 1;
    const NLMSG_ERROR: u16 = 2;
    /// `idiag_cookie` of a request that names the socket by its addresses alone.
    const NO_COOKIE: u32 = !0;

    #[repr(C)]
    struct NlMsgHdr {
        len: u32,
        kind: u16,
        flags: u16,
        seq: u32,
        pid: u32,
    }

    /// `struct inet_diag_sockid`: ports and addresses in network byte order.
    #[repr(C)]
    struct SockId {
        sport: u16,
        dport: u16,
        src: [u8; 16],
        dst: [u8; 16],
        interface: u32,
        cookie: [u32; 2],
    }

    /// `struct inet_diag_req_v2`.
    #[repr(C)]
    struct Request {
        hdr: NlMsgHdr,
        family: u8,
        protocol: u8,
        ext: u8,
        pad: u8,
        states: u32,
        id: SockId,
    }

    /// Offset of `idiag_uid` in `struct inet_diag_msg` (family, state, timer, retrans: 4
    /// bytes; the 48-byte id; expires, rqueue, wqueue: 12 bytes).
    const UID_AT: usize = 4 + 48 + 12;
    const HDR: usize = std::mem::size_of::<NlMsgHdr>();

    fn octets(ip: IpAddr) -> [u8; 16] {
        let mut out = [0u8; 16];
        match ip {
            IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
            IpAddr::V6(v6) => out = v6.octets(),
        }
        out
    }

    /// `Ok(Some(uid))` for the socket found, `Ok(None)` when the kernel has no such socket,
    /// `Err` when netlink cannot be used.
    pub fn owner(src: SocketAddr, dst: SocketAddr) -> io::Result<Option<u32>> {
        let family = match (src.ip(), dst.ip()) {
            (IpAddr::V4(_), IpAddr::V4(_)) => libc::AF_INET,
            (IpAddr::V6(_), IpAddr::V6(_)) => libc::AF_INET6,
            _ => return Ok(None),
        };
        // SAFETY: plain socket(2); the descriptor is owned at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                NETLINK_SOCK_DIAG,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a new descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let timeout = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        // SAFETY: the option value is a timeval of the size given.
        let set = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&timeout as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if set != 0 {
            return Err(io::Error::last_os_error());
        }
        let req = Request {
            hdr: NlMsgHdr {
                len: std::mem::size_of::<Request>() as u32,
                kind: SOCK_DIAG_BY_FAMILY,
                flags: NLM_F_REQUEST,
                seq: 1,
                pid: 0,
            },
            family: family as u8,
            protocol: libc::IPPROTO_TCP as u8,
            ext: 0,
            pad: 0,
            states: !0,
            id: SockId {
                sport: src.port().to_be(),
                dport: dst.port().to_be(),
                src: octets(src.ip()),
                dst: octets(dst.ip()),
                interface: 0,
                cookie: [NO_COOKIE; 2],
            },
        };
        // SAFETY: an all-zero sockaddr_nl is valid; the kernel is pid 0.
        let mut kernel: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        kernel.nl_family = libc::AF_NETLINK as libc::sa_family_t;
        // SAFETY: req is a plain repr(C) value of the length sent; the address is a
        // sockaddr_nl of the size given.
        let sent = unsafe {
            libc::sendto(
                fd.as_raw_fd(),
                (&req as *const Request).cast(),
                std::mem::size_of::<Request>(),
                0,
                (&kernel as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as libc::socklen_t,
            )
        };
        if sent < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut buf = [0u8; 4096];
        // SAFETY: buf is writable for its whole length.
        let got = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if got < 0 {
            return Err(io::Error::last_os_error());
        }
        parse(&buf[..got as usize])
    }

    /// The uid in the kernel's answer; `Ok(None)` for "no such socket" (`ENOENT`).
    pub(super) fn parse(msg: &[u8]) -> io::Result<Option<u32>> {
        let word = |at: usize| -> Option<u32> {
            msg.get(at..at + 4)
                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        let bad = || io::Error::new(io::ErrorKind::InvalidData, "short sock_diag answer");
        let kind = msg
            .get(4..6)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
            .ok_or_else(bad)?;
        if kind == NLMSG_ERROR {
            let errno = word(HDR).ok_or_else(bad)? as i32;
            return if -errno == libc::ENOENT {
                Ok(None)
            } else {
                Err(io::Error::from_raw_os_error(-errno))
            };
        }
        if kind != SOCK_DIAG_BY_FAMILY {
            return Err(bad());
        }
        word(HDR + UID_AT).map(Some).ok_or_else(bad)
    }
}

#[cfg(not(target_os = "linux"))]
mod diag {
    use std::net::SocketAddr;

    pub fn owner(_: SocketAddr, _: SocketAddr) -> std::io::Result<Option<u32>> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn me() -> u32 {
        // SAFETY: getuid has no preconditions.
        unsafe { libc::getuid() }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn netlink_names_the_owner_the_proc_table_names() {
        for bind in ["127.0.0.1:0", "[::1]:0"] {
            let Ok(listener) = TcpListener::bind(bind) else {
                continue; // no IPv6 loopback here
            };
            let server = listener.local_addr().unwrap();
            let client = TcpStream::connect(server).unwrap();
            let (accepted, peer) = listener.accept().unwrap();
            assert_eq!(peer, client.local_addr().unwrap());
            // The client's socket: its own address is the peer, its remote the server.
            assert_eq!(diag::owner(peer, server).unwrap(), Some(me()), "{bind}");
            assert_eq!(proc_owner(peer), Some(me()), "{bind}");
            // The server's end of the same connection is found the other way round.
            assert_eq!(
                diag::owner(server, peer).unwrap(),
                Some(me()),
                "{bind} server side"
            );
            // This account's own connection is not foreign.
            assert_eq!(foreign_owner(peer, server), None);
            drop((accepted, client));
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn no_such_socket_is_none_not_an_error() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        // A port nothing is connected from.
        let nobody: SocketAddr = "127.0.0.1:1".parse().unwrap();
        assert_eq!(diag::owner(nobody, server).unwrap(), None);
        assert_eq!(socket_owner(nobody, server), None);
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn the_answer_is_read_by_its_layout() {
        // An inet_diag_msg for uid 4242 after its netlink header.
        let mut msg = vec![0u8; 16 + 72];
        msg[4..6].copy_from_slice(&20u16.to_ne_bytes());
        msg[16 + 64..16 + 68].copy_from_slice(&4242u32.to_ne_bytes());
        assert_eq!(diag::parse(&msg).unwrap(), Some(4242));
        // NLMSG_ERROR with -ENOENT: no such socket.
        let mut err = vec![0u8; 16 + 4];
        err[4..6].copy_from_slice(&2u16.to_ne_bytes());
        err[16..20].copy_from_slice(&(-libc::ENOENT).to_ne_bytes());
        assert_eq!(diag::parse(&err).unwrap(), None);
        // NLMSG_ERROR with another errno is an error (the /proc table is read instead).
        err[16..20].copy_from_slice(&(-libc::EPERM).to_ne_bytes());
        assert!(diag::parse(&err).is_err());
        // A truncated answer is an error, not a uid.
        assert!(diag::parse(&msg[..40]).is_err());
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn another_accounts_connection_is_foreign_by_netlink_and_by_the_table() {
        let su = std::path::Path::new("/bin/su").exists()
            || std::path::Path::new("/usr/bin/su").exists();
        if me() != 0 || !su {
            eprintln!("not root (or no su): another account's connection is not tried");
            return;
        }
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let server = listener.local_addr().unwrap();
        // `nobody` connects and waits for the server to close the connection.
        let script = format!(
            "import socket; s = socket.create_connection(('127.0.0.1', {})); s.recv(1)",
            server.port()
        );
        let mut client = std::process::Command::new("su")
            .args(["-s", "/bin/sh", "nobody", "-c"])
            .arg(format!("python3 -c \"{script}\""))
            .spawn()
            .unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        let nobody = std::process::Command::new("id")
            .args(["-u", "nobody"])
            .output()
            .unwrap();
        let nobody: u32 = String::from_utf8_lossy(&nobody.stdout)
            .trim()
            .parse()
            .unwrap();
        assert_ne!(nobody, 0);
        assert_eq!(diag::owner(peer, server).unwrap(), Some(nobody));
        assert_eq!(proc_owner(peer), Some(nobody));
        assert_eq!(foreign_owner(peer, server), Some(nobody));
        drop(accepted);
        client.wait().unwrap();
    }

    #[test]
    fn a_peer_off_loopback_is_never_foreign() {
        let peer: SocketAddr = "192.0.2.7:40000".parse().unwrap();
        let local: SocketAddr = "192.0.2.1:8080".parse().unwrap();
        assert_eq!(foreign_owner(peer, local), None);
    }
}

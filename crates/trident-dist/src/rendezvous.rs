//! Hands the 128-byte NCCL id from rank 0 to the others when no MPI is there
//! to broadcast it (torchrun, srun without MPI): rank 0 listens on
//! `MASTER_PORT + 1` (torchrun's own store holds `MASTER_PORT`), every other
//! rank connects to `MASTER_ADDR`, says its rank and world size, and reads
//! the id. Nothing else travels this way; the data goes over NCCL.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use trident_core::{Error, Result};

/// The port rank 0 listens on for `MASTER_PORT`.
pub fn port(master_port: u16) -> Result<u16> {
    master_port.checked_add(1).ok_or_else(|| {
        Error::arg(
            "MASTER_PORT",
            "65535 leaves no port above it for the NCCL id",
        )
    })
}

fn io(what: &str, e: std::io::Error) -> Error {
    Error::Backend(format!("NCCL id rendezvous: {what}: {e}").into())
}

/// Rank 0: serves `id` to the `size - 1` other ranks, each of which must
/// report the same world size.
pub fn serve(port: u16, size: usize, id: &[u8; 128], timeout: Duration) -> Result<()> {
    let listener = TcpListener::bind(("0.0.0.0", port))
        .map_err(|e| io(&format!("listening on port {port}"), e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| io("listener", e))?;
    let deadline = Instant::now() + timeout;
    let mut served = vec![false; size];
    served[0] = true;
    while served.iter().any(|s| !s) {
        match listener.accept() {
            Ok((mut stream, _)) => {
                stream.set_nonblocking(false).map_err(|e| io("peer", e))?;
                stream
                    .set_read_timeout(Some(timeout))
                    .map_err(|e| io("peer", e))?;
                let mut hello = [0u8; 16];
                stream
                    .read_exact(&mut hello)
                    .map_err(|e| io("reading a peer's rank", e))?;
                let rank = u64::from_le_bytes(hello[..8].try_into().unwrap_or_default()) as usize;
                let their_size =
                    u64::from_le_bytes(hello[8..].try_into().unwrap_or_default()) as usize;
                let ok = their_size == size && rank > 0 && rank < size && !served[rank];
                stream
                    .write_all(&[u8::from(ok)])
                    .map_err(|e| io("answering a peer", e))?;
                if !ok {
                    return Err(Error::arg(
                        "WORLD_SIZE",
                        format!(
                            "rank 0 runs {size} ranks but a peer says it is rank {rank} of {their_size}"
                        ),
                    ));
                }
                stream.write_all(id).map_err(|e| io("sending the id", e))?;
                served[rank] = true;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() > deadline {
                    let missing: Vec<usize> = (0..size).filter(|&r| !served[r]).collect();
                    return Err(Error::Backend(
                        format!("NCCL id rendezvous: ranks {missing:?} did not connect within {timeout:?}").into(),
                    ));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => return Err(io("accepting", e)),
        }
    }
    Ok(())
}

/// Any other rank: fetches the id from rank 0 at `addr:port`, retrying
/// while rank 0 is not listening yet.
pub fn fetch(
    addr: &str,
    port: u16,
    rank: usize,
    size: usize,
    timeout: Duration,
) -> Result<[u8; 128]> {
    let deadline = Instant::now() + timeout;
    let mut stream = connect(addr, port, deadline, timeout)?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| io("socket", e))?;
    let mut hello = [0u8; 16];
    hello[..8].copy_from_slice(&(rank as u64).to_le_bytes());
    hello[8..].copy_from_slice(&(size as u64).to_le_bytes());
    stream
        .write_all(&hello)
        .map_err(|e| io("sending this rank", e))?;
    let mut ok = [0u8; 1];
    stream
        .read_exact(&mut ok)
        .map_err(|e| io("reading rank 0's answer", e))?;
    if ok[0] != 1 {
        return Err(Error::arg(
            "WORLD_SIZE",
            format!("rank 0 refused rank {rank} of {size}: the ranks disagree on the world size"),
        ));
    }
    let mut id = [0u8; 128];
    stream
        .read_exact(&mut id)
        .map_err(|e| io("reading the id", e))?;
    Ok(id)
}

fn connect(addr: &str, port: u16, deadline: Instant, timeout: Duration) -> Result<TcpStream> {
    loop {
        let addrs = (addr, port)
            .to_socket_addrs()
            .map_err(|e| io(&format!("resolving {addr}"), e))?;
        for a in addrs {
            if let Ok(s) = TcpStream::connect_timeout(&a, Duration::from_secs(2)) {
                return Ok(s);
            }
        }
        if Instant::now() > deadline {
            return Err(Error::Backend(
                format!(
                    "NCCL id rendezvous: rank 0 at {addr}:{port} did not answer within {timeout:?}"
                )
                .into(),
            ));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_reaches_every_rank_and_a_wrong_size_is_refused() {
        let port = 29_000 + (std::process::id() % 1000) as u16 * 2;
        let id = [7u8; 128];
        let server = std::thread::spawn(move || serve(port, 3, &id, Duration::from_secs(20)));
        let a = std::thread::spawn(move || fetch("127.0.0.1", port, 1, 3, Duration::from_secs(20)));
        let b = std::thread::spawn(move || fetch("127.0.0.1", port, 2, 3, Duration::from_secs(20)));
        assert_eq!(a.join().unwrap().unwrap(), id);
        assert_eq!(b.join().unwrap().unwrap(), id);
        server.join().unwrap().unwrap();

        let port = port + 1;
        let server = std::thread::spawn(move || serve(port, 2, &id, Duration::from_secs(20)));
        let e = fetch("127.0.0.1", port, 1, 3, Duration::from_secs(20)).unwrap_err();
        assert!(e.to_string().contains("WORLD_SIZE"), "{e}");
        assert!(server.join().unwrap().is_err());
    }

    #[test]
    fn a_rank_that_never_comes_is_a_bounded_error() {
        let port = 31_000 + (std::process::id() % 1000) as u16;
        let e = serve(port, 2, &[0; 128], Duration::from_millis(300)).unwrap_err();
        assert!(e.to_string().contains("did not connect"), "{e}");
    }
}

//! `rffi-worker <rank> <world> <fd> <protocol> <controller pid>`: a session worker process without Python. It
//! serves the controller's commands on socket `fd` with this executable's own rffi runtime (the
//! plugins it is asked to load register into it) until shutdown, or until the controller is gone.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let nums: Vec<i64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let [rank, world, fd, protocol, parent] = nums[..] else {
        eprintln!(
            "usage: rffi-worker <rank> <world> <fd> <protocol> <controller pid> (started by a session)"
        );
        std::process::exit(2);
    };
    let link = match rffi_session::ffi::worker_link(fd, protocol) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rffi-worker {rank}: {}", e.message());
            std::process::exit(2);
        }
    };
    rffi_session::process::adopt_worker_process(parent, link.raw_fd());
    if let Err(e) = rffi_session::worker::serve(rank as usize, world as usize, &link) {
        eprintln!("rffi-worker {rank}: {e}");
        std::process::exit(1);
    }
}

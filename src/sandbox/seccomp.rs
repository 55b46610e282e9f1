//! The sandbox's seccomp layer: what Landlock does not govern, refused by system call.
//!
//! Landlock confines paths and TCP ports, but not `connect()` to a pathname unix
//! socket, nor the ways to reach a TCP port without `connect()` (MPTCP, TCP Fast Open),
//! nor `listen()` on an unbound socket, nor io_uring, whose operations skip the checks
//! made on system calls. The filter here, compiled once at start-up, is installed once
//! on each of the server's spawning threads, and inherited by each command's shell they
//! start (which enters the Landlock ruleset itself before its `execve`). It refuses
//! them:
//!
//! - `socket()` is allowed for `AF_UNIX` (only with `--unix-sockets allow`), `AF_INET`
//!   and `AF_INET6` (not with `--network deny`) and `AF_NETLINK` (the interface and
//!   route listing that name resolution reads; under `--network deny`, NETLINK_ROUTE
//!   only, not sock_diag); every other family is refused.
//!   `socketpair()` stays allowed: a program's own processes still talk through it.
//! - With a port list: MPTCP and every protocol but TCP, UDP and ICMP, raw sockets,
//!   `MSG_FASTOPEN` on `sendto`/`sendmsg`/`sendmmsg`, `TCP_FASTOPEN_CONNECT` and
//!   `listen()` are refused.
//! - `io_uring_setup` is refused.
//! - `prlimit64`, `setpriority`, `ioprio_set` and the `sched_set*` calls are refused
//!   on any process but the caller (pid 0): a command neither sets the server's
//!   limits nor reschedules another call's processes.
//!
//! A refused call fails with `EPERM`, so the program reports it as it would any other
//! error ("Operation not permitted"); nothing is killed. The one exception is a system
//! call of another architecture's ABI (a 32-bit `int 0x80` on x86_64), which ends the
//! process: its numbers are not the ones checked here.

use std::collections::BTreeMap;
use std::fmt;
use std::io;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen as Len, SeccompCmpOp as Op, SeccompCondition,
    SeccompFilter, SeccompRule, TargetArch,
};

use super::Network;

/// `--unix-sockets`: whether sandboxed commands may create unix sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UnixSockets {
    /// None can be created (`socketpair()` still works): no daemon's socket is reached.
    #[default]
    Deny,
    /// As without the sandbox: any socket whose path is known can be connected to.
    Allow,
}

impl std::str::FromStr for UnixSockets {
    type Err = String;

    fn from_str(s: &str) -> Result<UnixSockets, String> {
        match s {
            "deny" => Ok(UnixSockets::Deny),
            "allow" => Ok(UnixSockets::Allow),
            other => Err(format!(
                "unknown unix socket setting {other:?} (expected deny or allow)"
            )),
        }
    }
}

/// The address families a command may make sockets of, with `--network` and
/// `--unix-sockets` as given.
fn families(network: &Network, unix: UnixSockets) -> Vec<i32> {
    let mut families = vec![libc::AF_NETLINK];
    if unix == UnixSockets::Allow {
        families.push(libc::AF_UNIX);
    }
    if *network != Network::Deny {
        families.extend([libc::AF_INET, libc::AF_INET6]);
    }
    families.sort_unstable();
    families
}

/// Internet protocols a socket may be made for under a port list: the default (0),
/// ICMP (ping sockets), TCP, UDP, ICMPv6. MPTCP (262) and SCTP, whose connects Landlock
/// does not check, are among the rest.
const PROTOCOLS: &[i32] = &[
    0,
    libc::IPPROTO_ICMP,
    libc::IPPROTO_TCP,
    libc::IPPROTO_UDP,
    58,
];

/// Socket types allowed under a port list (the type's low bits, flags aside).
const TYPES: &[i32] = &[libc::SOCK_STREAM, libc::SOCK_DGRAM];

/// `TCP_FASTOPEN_CONNECT`: the next `connect()` is deferred to the first write, which
/// then connects without the check.
const TCP_FASTOPEN_CONNECT: i32 = 30;

/// Why the filter cannot be built or installed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("this architecture ({0}) has no seccomp filter here")]
    Arch(&'static str),
    #[error("cannot build the seccomp filter: {0}")]
    Build(#[from] seccompiler::BackendError),
}

/// The compiled filter: programs to install, all of which apply.
#[derive(Debug, Clone)]
pub struct Filter {
    programs: Vec<BpfProgram>,
    summary: String,
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)
    }
}

impl Filter {
    /// Compiles the filter for this machine's architecture, once.
    pub fn new(network: &Network, unix: UnixSockets) -> Result<Filter, Error> {
        let arch = TargetArch::try_from(std::env::consts::ARCH)
            .map_err(|_| Error::Arch(std::env::consts::ARCH))?;
        let mut refused = Refused::default();
        // socket(domain, type, protocol): families outside the allowed ones.
        for (low, high) in gaps(&families(network, unix)) {
            refused.add(libc::SYS_socket, between(0, low, high)?)?;
        }
        refused.add(libc::SYS_io_uring_setup, Vec::new())?;
        refused.other_processes()?;
        refused.the_machine()?;
        if *network == Network::Deny {
            // Netlink for the interface and route listing name resolution reads
            // (NETLINK_ROUTE, 0) only: sock_diag (`ss`) would list every socket.
            let netlink = arg(0, Op::Eq, libc::AF_NETLINK.into())?;
            let not_route = arg(2, Op::Ne, libc::NETLINK_ROUTE.into())?;
            refused.add(libc::SYS_socket, vec![netlink, not_route])?;
        }
        if let Network::Ports(_) = network {
            refused.around_the_ports()?;
        }
        let filter = SeccompFilter::new(
            refused.0,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EPERM as u32),
            arch,
        )?;
        let mut programs = vec![BpfProgram::try_from(filter)?];
        programs.extend(x32_refused());
        Ok(Filter {
            programs,
            summary: summary(network, unix),
        })
    }

    /// Installs the filter on the calling thread (`no_new_privs` first): it binds that
    /// thread and every thread and process it starts from then on.
    pub fn apply(&self) -> io::Result<()> {
        for program in &self.programs {
            seccompiler::apply_filter(program).map_err(io::Error::other)?;
        }
        Ok(())
    }

    /// Whether the calling thread carries this filter, so that what it starts inherits
    /// it: installed on it now when it is a thread that only spawns and carries none
    /// yet ([`only_spawns_here`]). The kernel compiles a filter and prepares its cache
    /// on every install, a quarter of a millisecond here: a thread that keeps the
    /// filter saves each call that.
    pub fn carried_here(&self) -> io::Result<bool> {
        CARRIED.with_borrow_mut(|carried| match carried {
            Carried::Filter(programs) => Ok(*programs == self.programs),
            Carried::Any => Ok(false),
            Carried::Spawner => {
                self.apply()?;
                *carried = Carried::Filter(self.programs.clone());
                Ok(true)
            }
        })
    }
}

/// What the calling thread may carry.
enum Carried {
    /// Nothing: it runs the server's own work.
    Any,
    /// It only spawns commands: the filter may be installed on it.
    Spawner,
    /// It carries these programs.
    Filter(Vec<BpfProgram>),
}

thread_local! {
    static CARRIED: std::cell::RefCell<Carried> = const { std::cell::RefCell::new(Carried::Any) };
}

/// Marks the calling thread as one that only spawns commands (a thread of its own, in
/// a cgroup of calls): a sandbox's filter may then be installed on it once, for all
/// the commands it spawns.
pub fn only_spawns_here() {
    CARRIED.with_borrow_mut(|carried| {
        if let Carried::Any = carried {
            *carried = Carried::Spawner;
        }
    });
}

/// The refused calls, by system call number.
#[derive(Default)]
struct Refused(BTreeMap<i64, Vec<SeccompRule>>);

impl Refused {
    /// Refuses `syscall` when every condition holds; with none, always.
    fn add(
        &mut self,
        syscall: libc::c_long,
        conditions: Vec<SeccompCondition>,
    ) -> Result<(), seccompiler::BackendError> {
        let rules = self.0.entry(syscall).or_default();
        if !conditions.is_empty() {
            rules.push(SeccompRule::new(conditions)?);
        }
        Ok(())
    }

    /// Limits, priorities and scheduling of any process but the caller: Landlock has no
    /// hook for them, and `prlimit --pid $PPID --fsize=0:0` would kill the server at its
    /// next write. The filter cannot know the caller's pid, so only 0 (the caller,
    /// which glibc's `setrlimit`, `nice`, `ioprio_set` and `sched_*` pass) is allowed;
    /// `setpriority` and `ioprio_set` for a whole user (`PRIO_USER`, `IOPRIO_WHO_USER`,
    /// where 0 is the caller's own uid, and so the server's) are refused too.
    fn other_processes(&mut self) -> Result<(), seccompiler::BackendError> {
        let not_self = |index| arg(index, Op::Ne, 0);
        // prlimit64(pid, resource, new, old): reading another's limits (no new ones)
        // changes nothing.
        let sets = SeccompCondition::new(2, Len::Qword, Op::Ne, 0)?;
        self.add(libc::SYS_prlimit64, vec![not_self(0)?, sets])?;
        for call in [
            libc::SYS_sched_setaffinity,
            libc::SYS_sched_setscheduler,
            libc::SYS_sched_setparam,
            libc::SYS_sched_setattr,
        ] {
            self.add(call, vec![not_self(0)?])?;
        }
        const IOPRIO_WHO_USER: i64 = 3;
        for (call, user) in [
            (libc::SYS_setpriority, i64::from(libc::PRIO_USER)),
            (libc::SYS_ioprio_set, IOPRIO_WHO_USER),
        ] {
            self.add(call, vec![not_self(1)?])?;
            self.add(call, vec![arg(0, Op::Eq, user)?])?;
        }
        Ok(())
    }

    /// What acts on the whole machine, as a container runtime's default profile
    /// refuses it: rebooting, loading a kernel or modules, setting the clock (adjusting
    /// it takes a capability the commands do not have) or the host's names, BPF programs, performance events of every process (`pid` -1),
    /// swap and process accounting. Sandboxed commands hold no capability either;
    /// this refuses them where a capability is not needed (unprivileged BPF and perf,
    /// where the system allows them) and keeps them refused should one slip through.
    fn the_machine(&mut self) -> Result<(), seccompiler::BackendError> {
        for call in [
            libc::SYS_reboot,
            libc::SYS_kexec_load,
            libc::SYS_kexec_file_load,
            libc::SYS_init_module,
            libc::SYS_finit_module,
            libc::SYS_delete_module,
            libc::SYS_settimeofday,
            libc::SYS_clock_settime,
            libc::SYS_sethostname,
            libc::SYS_setdomainname,
            libc::SYS_bpf,
            libc::SYS_swapon,
            libc::SYS_swapoff,
            libc::SYS_acct,
        ] {
            self.add(call, Vec::new())?;
        }
        // perf_event_open(attr, pid, cpu, group, flags): pid -1 is every process.
        let everyone = SeccompCondition::new(1, Len::Dword, Op::Eq, u64::from(u32::MAX))?;
        self.add(libc::SYS_perf_event_open, vec![everyone])
    }

    /// Under a port list: the ways to a port that Landlock's rules do not see (other
    /// protocols and socket types, TCP Fast Open, listening).
    fn around_the_ports(&mut self) -> Result<(), seccompiler::BackendError> {
        for family in [libc::AF_INET, libc::AF_INET6] {
            let domain = || arg(0, Op::Eq, family.into());
            // The type's low bits (SOCK_TYPE_MASK); the flags above them are not looked at.
            for kind in (0..=0xf).filter(|kind| !TYPES.contains(kind)) {
                let kind = arg(1, Op::MaskedEq(0xf), kind.into())?;
                self.add(libc::SYS_socket, vec![domain()?, kind])?;
            }
            for (low, high) in gaps(PROTOCOLS) {
                let mut rule = between(2, low, high)?;
                rule.push(domain()?);
                self.add(libc::SYS_socket, rule)?;
            }
        }
        let fast_open = i64::from(libc::MSG_FASTOPEN);
        let flags = |index| arg(index, Op::MaskedEq(fast_open as u64), fast_open);
        self.add(libc::SYS_sendto, vec![flags(3)?])?;
        self.add(libc::SYS_sendmsg, vec![flags(2)?])?;
        self.add(libc::SYS_sendmmsg, vec![flags(3)?])?;
        let tcp = arg(1, Op::Eq, libc::IPPROTO_TCP.into())?;
        let connect = arg(2, Op::Eq, TCP_FASTOPEN_CONNECT.into())?;
        self.add(libc::SYS_setsockopt, vec![tcp, connect])?;
        self.add(libc::SYS_listen, Vec::new())
    }
}

/// A condition on the 32-bit argument `index`.
fn arg(index: u8, op: Op, value: i64) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(index, Len::Dword, op, value as u64)
}

/// Argument `index` above `low` and, when there is one, below `high`.
fn between(
    index: u8,
    low: i64,
    high: Option<i64>,
) -> Result<Vec<SeccompCondition>, seccompiler::BackendError> {
    let mut conditions = vec![arg(index, Op::Gt, low)?];
    if let Some(high) = high {
        conditions.push(arg(index, Op::Lt, high)?);
    }
    Ok(conditions)
}

/// The ranges between allowed values, as (above, below) bounds: `None` for no upper
/// bound. The values are sorted and positive.
fn gaps(allowed: &[i32]) -> Vec<(i64, Option<i64>)> {
    let mut gaps = Vec::new();
    // 0 counts as allowed: protocol 0 is the default, and the kernel itself refuses the
    // family AF_UNSPEC.
    let mut above = 0;
    for value in allowed.iter().map(|&v| i64::from(v)) {
        if value > above + 1 {
            gaps.push((above, Some(value)));
        }
        above = value;
    }
    gaps.push((above, None));
    gaps
}

/// On x86_64, system calls of the x32 ABI carry the same architecture but numbers with
/// bit 30 set, which the filter's numbers do not match: they are refused. Elsewhere
/// there is no such ABI.
fn x32_refused() -> Option<BpfProgram> {
    #[cfg(target_arch = "x86_64")]
    {
        use seccompiler::sock_filter;
        const LD: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
        const JEQ: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
        const JGE: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
        const RET: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
        const AUDIT_ARCH_X86_64: u32 = 62 | 0x8000_0000 | 0x4000_0000;
        const X32_SYSCALL_BIT: u32 = 0x4000_0000;
        let op = |code, jt, jf, k| sock_filter { code, jt, jf, k };
        Some(vec![
            op(LD, 0, 0, 4), // seccomp_data.arch
            op(JEQ, 0, 3, AUDIT_ARCH_X86_64),
            op(LD, 0, 0, 0), // seccomp_data.nr
            op(JGE, 0, 1, X32_SYSCALL_BIT),
            op(RET, 0, 0, libc::SECCOMP_RET_ERRNO | libc::EPERM as u32),
            op(RET, 0, 0, libc::SECCOMP_RET_ALLOW),
        ])
    }
    #[cfg(not(target_arch = "x86_64"))]
    None
}

/// What the filter refuses, for the start-up log.
fn summary(network: &Network, unix: UnixSockets) -> String {
    let unix = match unix {
        UnixSockets::Deny => "unix sockets: none can be made (socketpair kept)",
        UnixSockets::Allow => "unix sockets: allowed (--unix-sockets allow)",
    };
    let network = match network {
        Network::Allow => "",
        Network::Deny => "; no internet or packet sockets, no netlink but NETLINK_ROUTE",
        Network::Ports(_) => "; no MPTCP, SCTP or raw sockets, TCP Fast Open or listen",
    };
    format!(
        "seccomp: {unix}{network}; io_uring refused; limits, priorities and scheduling of other processes refused"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_the_values_between_the_allowed_ones() {
        assert_eq!(
            gaps(&[1, 2, 10, 16]),
            [(2, Some(10)), (10, Some(16)), (16, None)]
        );
        assert_eq!(
            gaps(&[2, 10, 16]),
            [(0, Some(2)), (2, Some(10)), (10, Some(16)), (16, None)]
        );
        assert_eq!(
            gaps(PROTOCOLS),
            [(1, Some(6)), (6, Some(17)), (17, Some(58)), (58, None)]
        );
    }

    #[test]
    fn families_follow_the_settings() {
        let unix = libc::AF_UNIX;
        let inet = [libc::AF_INET, libc::AF_INET6];
        assert!(!families(&Network::Allow, UnixSockets::Deny).contains(&unix));
        assert!(families(&Network::Allow, UnixSockets::Allow).contains(&unix));
        let denied = families(&Network::Deny, UnixSockets::Deny);
        assert_eq!(denied, [libc::AF_NETLINK]);
        let ports = families(&Network::Ports(vec![443]), UnixSockets::Deny);
        assert!(inet.iter().all(|f| ports.contains(f)));
    }

    #[test]
    fn the_filter_compiles_for_each_setting() {
        for network in [Network::Allow, Network::Deny, Network::Ports(vec![443, 80])] {
            for unix in [UnixSockets::Deny, UnixSockets::Allow] {
                let filter = Filter::new(&network, unix).unwrap();
                // Well within the kernel's limit of 4,096 instructions a program.
                assert!(
                    filter.programs.iter().all(|p| p.len() < 1024),
                    "{network:?}"
                );
                assert!(filter.to_string().starts_with("seccomp: unix sockets: "));
            }
        }
        assert_eq!("allow".parse(), Ok(UnixSockets::Allow));
        assert!("maybe".parse::<UnixSockets>().is_err());
    }
}

//! `Device`: where a tensor lives, with a string form compatible with tvm-ffi (`cpu:0`, `cuda:1`).
//!
//! A `DLDevice` read from foreign memory may hold any integers, so values coming from C go
//! through [`Device::from_raw`]; names are tvm-ffi's so device strings cross between the runtimes.

use core::fmt;
use core::str::FromStr;

use crate::abi::{
    kDLCPU, kDLCUDA, kDLCUDAHost, kDLCUDAManaged, kDLExtDev, kDLHexagon, kDLMAIA, kDLMetal,
    kDLOneAPI, kDLOpenCL, kDLROCM, kDLROCMHost, kDLTrn, kDLVPI, kDLVulkan, kDLWebGPU, DLDevice,
};

/// A device: a DLPack device type and a non-negative index.
///
/// The field is unchecked; use [`Device::new`] or [`Device::from_raw`] for values from elsewhere.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Device(pub DLDevice);

/// The canonical name of every device type this build knows, in DLPack order.
const DEVICE_NAMES: [(i32, &str); 16] = [
    (kDLCPU, "cpu"),
    (kDLCUDA, "cuda"),
    (kDLCUDAHost, "cuda_host"),
    (kDLOpenCL, "opencl"),
    (kDLVulkan, "vulkan"),
    (kDLMetal, "metal"),
    (kDLVPI, "vpi"),
    (kDLROCM, "rocm"),
    (kDLROCMHost, "rocm_host"),
    (kDLExtDev, "ext_dev"),
    (kDLCUDAManaged, "cuda_managed"),
    (kDLOneAPI, "oneapi"),
    (kDLWebGPU, "webgpu"),
    (kDLHexagon, "hexagon"),
    (kDLMAIA, "maia"),
    (kDLTrn, "trn"),
];

/// Other spellings accepted when parsing (never printed), as written by TVM-era tools.
const DEVICE_ALIASES: [(&str, i32); 5] = [
    ("gpu", kDLCUDA),
    ("cl", kDLOpenCL),
    ("llvm", kDLCPU),
    ("hip", kDLROCM),
    ("mtl", kDLMetal),
];

/// The canonical name of a DLPack device type, or `None` if this build does not know it.
pub fn device_type_name(device_type: i32) -> Option<&'static str> {
    DEVICE_NAMES
        .iter()
        .find(|(ty, _)| *ty == device_type)
        .map(|(_, name)| *name)
}

/// The DLPack device type for a canonical name or an alias (`gpu`, `cl`, `llvm`, `hip`, `mtl`).
pub fn device_type_from_name(name: &str) -> Option<i32> {
    DEVICE_NAMES
        .iter()
        .find(|(_, n)| *n == name)
        .map(|(ty, _)| *ty)
        .or_else(|| {
            DEVICE_ALIASES
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, ty)| *ty)
        })
}

fn check(dev: DLDevice) -> Result<&'static str, String> {
    let Some(name) = device_type_name(dev.device_type) else {
        return Err(format!("unknown device type {}", dev.device_type));
    };
    if dev.device_id < 0 {
        return Err(format!("negative index {} for {name}", dev.device_id));
    }
    Ok(name)
}

fn parse_index(text: &str) -> Result<i32, String> {
    if text.is_empty() {
        return Err("missing index after ':'".to_string());
    }
    if text.starts_with('-') && text.len() > 1 && text[1..].bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("index {text} is negative"));
    }
    // `i32::from_str` alone would also take a leading `+`.
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("index {text:?} is not a non-negative integer"));
    }
    text.parse::<i32>()
        .map_err(|_| format!("index {text} is out of range 0..={}", i32::MAX))
}

fn parse_device(s: &str) -> Result<DLDevice, String> {
    if s.is_empty() {
        return Err("empty string".to_string());
    }
    let (name, index) = match s.split_once(':') {
        None => (s, None),
        Some((_, index)) if index.contains(':') => {
            return Err("more than one ':'".to_string());
        }
        Some((name, index)) => (name, Some(index)),
    };
    let Some(device_type) = device_type_from_name(name) else {
        let names: Vec<&str> = DEVICE_NAMES.iter().map(|(_, n)| *n).collect();
        let aliases: Vec<&str> = DEVICE_ALIASES.iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown device name {name:?}; expected one of {} (or alias {})",
            names.join(", "),
            aliases.join(", ")
        ));
    };
    let device_id = match index {
        None => 0,
        Some(text) => parse_index(text)?,
    };
    Ok(DLDevice {
        device_type,
        device_id,
    })
}

impl Device {
    /// A device from a DLPack device type and an index, both checked as [`Device::from_raw`] does.
    pub fn new(device_type: i32, index: i32) -> Result<Device, String> {
        Device::from_raw(DLDevice {
            device_type,
            device_id: index,
        })
    }

    /// The host CPU, `cpu:0`.
    pub const fn cpu() -> Device {
        Device(DLDevice {
            device_type: kDLCPU,
            device_id: 0,
        })
    }

    /// CUDA GPU number `index`.
    ///
    /// # Panics
    ///
    /// If `index` is negative: callers pass a literal or a count they own, so a negative one is a
    /// bug, not input to report. Use [`Device::new`] for an index from elsewhere.
    pub const fn cuda(index: i32) -> Device {
        assert!(index >= 0, "Device::cuda: negative device index");
        Device(DLDevice {
            device_type: kDLCUDA,
            device_id: index,
        })
    }

    /// The DLPack device type number (`kDLCPU`, `kDLCUDA`, ...).
    pub const fn device_type(self) -> i32 {
        self.0.device_type
    }

    /// The DLPack device type number; the same as [`Device::device_type`], under tvm-ffi's name.
    pub const fn dlpack_device_type(self) -> i32 {
        self.0.device_type
    }

    /// The device index (`device_id` in DLPack).
    pub const fn index(self) -> i32 {
        self.0.device_id
    }

    /// The canonical device type name (`cpu`, `cuda`, ...); `unknown` for an unchecked value
    /// whose type this build does not know.
    pub fn type_name(self) -> &'static str {
        device_type_name(self.0.device_type).unwrap_or("unknown")
    }

    /// The underlying `DLDevice`.
    pub const fn raw(self) -> DLDevice {
        self.0
    }

    /// Validates a `DLDevice` read from foreign memory: the device type must be one this build
    /// knows and the index non-negative.
    pub fn from_raw(dev: DLDevice) -> Result<Device, String> {
        check(dev)
            .map(|_| Device(dev))
            .map_err(|e| format!("invalid DLDevice: {e}"))
    }

    /// Parses `<name>` or `<name>:<index>`, e.g. `cpu`, `cuda:1`, `gpu:0`; the index defaults to 0.
    pub fn parse(s: &str) -> Result<Device, String> {
        parse_device(s)
            .map(Device)
            .map_err(|e| format!("invalid device {s:?}: {e}"))
    }
}

impl FromStr for Device {
    type Err = String;

    fn from_str(s: &str) -> Result<Device, String> {
        Device::parse(s)
    }
}

impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match check(self.0) {
            Ok(name) => format!("{name}:{}", self.0.device_id),
            // Printed in a form `parse` rejects, so an invalid value never turns into a valid one
            // by a round trip through text.
            Err(_) => format!(
                "invalid(device_type={}, index={})",
                self.0.device_type, self.0.device_id
            ),
        };
        f.pad(&text)
    }
}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Device {
        Device::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    fn err(s: &str) -> String {
        match Device::parse(s) {
            Ok(dev) => panic!("{s:?} parsed as {dev:?}"),
            Err(e) => e,
        }
    }

    #[test]
    fn layout_is_dldevice() {
        assert_eq!(core::mem::size_of::<Device>(), 8);
        assert_eq!(core::mem::align_of::<Device>(), 4);
    }

    #[test]
    fn names_match_dlpack_numbers() {
        let expected = [
            (1, "cpu"),
            (2, "cuda"),
            (3, "cuda_host"),
            (4, "opencl"),
            (7, "vulkan"),
            (8, "metal"),
            (9, "vpi"),
            (10, "rocm"),
            (11, "rocm_host"),
            (12, "ext_dev"),
            (13, "cuda_managed"),
            (14, "oneapi"),
            (15, "webgpu"),
            (16, "hexagon"),
            (17, "maia"),
            (18, "trn"),
        ];
        for (ty, name) in expected {
            assert_eq!(device_type_name(ty), Some(name));
            assert_eq!(device_type_from_name(name), Some(ty));
        }
        for ty in [i32::MIN, -1, 0, 5, 6, 19, 129, i32::MAX] {
            assert_eq!(device_type_name(ty), None, "{ty}");
        }
        assert_eq!(device_type_from_name(""), None);
        assert_eq!(device_type_from_name("CUDA"), None);
        assert_eq!(device_type_from_name("trainium"), None);
    }

    #[test]
    fn every_name_round_trips() {
        for (ty, name) in DEVICE_NAMES {
            for index in [0, 1, 7, i32::MAX] {
                let dev = Device::new(ty, index).unwrap();
                assert_eq!(dev.device_type(), ty);
                assert_eq!(dev.dlpack_device_type(), ty);
                assert_eq!(dev.index(), index);
                assert_eq!(dev.type_name(), name);
                let text = dev.to_string();
                assert_eq!(text, format!("{name}:{index}"));
                assert_eq!(Device::parse(&text), Ok(dev));
                assert_eq!(text.parse::<Device>(), Ok(dev));
            }
            assert_eq!(p(name), Device::new(ty, 0).unwrap());
        }
    }

    #[test]
    fn aliases_parse_to_canonical() {
        let expected = [
            ("gpu", kDLCUDA, "cuda"),
            ("cl", kDLOpenCL, "opencl"),
            ("llvm", kDLCPU, "cpu"),
            ("hip", kDLROCM, "rocm"),
            ("mtl", kDLMetal, "metal"),
        ];
        for (alias, ty, name) in expected {
            assert_eq!(device_type_from_name(alias), Some(ty));
            assert_eq!(p(alias), Device::new(ty, 0).unwrap());
            let dev = p(&format!("{alias}:3"));
            assert_eq!(dev, Device::new(ty, 3).unwrap());
            assert_eq!(dev.to_string(), format!("{name}:3"));
        }
    }

    #[test]
    fn constructors_and_display() {
        assert_eq!(Device::cpu(), Device::new(kDLCPU, 0).unwrap());
        assert_eq!(Device::cuda(1), Device::new(kDLCUDA, 1).unwrap());
        assert_eq!(
            Device::cuda(2).raw(),
            DLDevice {
                device_type: 2,
                device_id: 2
            }
        );
        assert_eq!(p("cpu"), Device::cpu());
        assert_eq!(p("cpu").to_string(), "cpu:0");
        assert_eq!(p("cuda:1").to_string(), "cuda:1");
        assert_eq!(format!("{:?}", Device::cuda(1)), "Device(cuda:1)");
        assert_eq!(format!("{:<7}|", Device::cpu()), "cpu:0  |");
        assert_eq!(p("cuda:007"), Device::cuda(7));
    }

    #[test]
    #[should_panic(expected = "negative device index")]
    fn cuda_rejects_negative_index() {
        let _ = Device::cuda(-1);
    }

    #[test]
    fn new_and_from_raw_reject_invalid() {
        for ty in [i32::MIN, -1, 0, 5, 6, 19, i32::MAX] {
            assert_eq!(
                Device::new(ty, 0),
                Err(format!("invalid DLDevice: unknown device type {ty}"))
            );
        }
        assert_eq!(
            Device::new(kDLCUDA, -1),
            Err("invalid DLDevice: negative index -1 for cuda".to_string())
        );
        assert_eq!(
            Device::from_raw(DLDevice {
                device_type: kDLCPU,
                device_id: i32::MIN
            }),
            Err(format!(
                "invalid DLDevice: negative index {} for cpu",
                i32::MIN
            ))
        );
        assert_eq!(
            Device::from_raw(DLDevice {
                device_type: 99,
                device_id: -1
            }),
            Err("invalid DLDevice: unknown device type 99".to_string())
        );
        let raw = DLDevice {
            device_type: kDLROCM,
            device_id: 4,
        };
        assert_eq!(Device::from_raw(raw).map(Device::raw), Ok(raw));
    }

    #[test]
    fn invalid_values_print_unparseably() {
        for dev in [
            Device(DLDevice {
                device_type: 99,
                device_id: 0,
            }),
            Device(DLDevice {
                device_type: kDLCUDA,
                device_id: -1,
            }),
        ] {
            let text = dev.to_string();
            assert!(text.starts_with("invalid(device_type="), "{text}");
            assert!(Device::parse(&text).is_err());
        }
        let unknown = Device(DLDevice {
            device_type: 99,
            device_id: 3,
        });
        assert_eq!(unknown.type_name(), "unknown");
        assert_eq!(
            format!("{unknown:?}"),
            "Device(invalid(device_type=99, index=3))"
        );
    }

    #[test]
    fn rejects_empty() {
        assert_eq!(err(""), "invalid device \"\": empty string");
    }

    #[test]
    fn rejects_unknown_names_listing_valid_ones() {
        let e = err("tpu:0");
        assert_eq!(
            e,
            "invalid device \"tpu:0\": unknown device name \"tpu\"; expected one of cpu, cuda, \
             cuda_host, opencl, vulkan, metal, vpi, rocm, rocm_host, ext_dev, cuda_managed, \
             oneapi, webgpu, hexagon, maia, trn (or alias gpu, cl, llvm, hip, mtl)"
        );
        for s in [
            "CUDA", "Cpu", " cpu", "cpu ", ":0", "cuda :0", "1", "trainium",
        ] {
            assert!(err(s).contains("unknown device name"), "{s}");
        }
    }

    #[test]
    fn rejects_bad_indices() {
        assert_eq!(
            err("cuda:"),
            "invalid device \"cuda:\": missing index after ':'"
        );
        assert_eq!(
            err("cuda:-1"),
            "invalid device \"cuda:-1\": index -1 is negative"
        );
        assert_eq!(
            err("cuda:abc"),
            "invalid device \"cuda:abc\": index \"abc\" is not a non-negative integer"
        );
        for s in [
            "cuda:+1", "cuda:1 ", "cuda: 1", "cuda:1.0", "cuda:-", "cuda:0x1", "cuda:-a",
        ] {
            assert!(err(s).contains("is not a non-negative integer"), "{s}");
        }
        assert_eq!(
            err("cuda:2147483648"),
            "invalid device \"cuda:2147483648\": index 2147483648 is out of range 0..=2147483647"
        );
        assert!(err("cpu:99999999999999999999").contains("out of range"));
    }

    #[test]
    fn rejects_extra_colons() {
        assert_eq!(
            err("cuda:0:1"),
            "invalid device \"cuda:0:1\": more than one ':'"
        );
        assert!(err("cuda::0").contains("more than one ':'"));
        assert!(err("::").contains("more than one ':'"));
    }

    #[test]
    fn from_str_matches_parse() {
        assert_eq!("rocm:2".parse::<Device>(), Device::parse("rocm:2"));
        assert_eq!("nope".parse::<Device>(), Device::parse("nope"));
    }
}

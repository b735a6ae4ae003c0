//! The registration model the engine interprets lives in the adapters crate
//! (`memtrail_adapters::spec`), beside the agents that build it.

pub(crate) use memtrail_adapters::spec::*;

//! gRPC server reflection: what to ask a server for its schema, and how to
//! read what it answers. The engine carries the exchange over its HTTP/2
//! connection; this module knows only the messages.
//!
//! The exchange: list the services, ask for the file defining each, then
//! for any file those import that the server has not sent yet, until the
//! schema is whole. Version `v1` is asked first and `v1alpha` when the
//! server does not have it (grpcio and grpc-go still serve both). The five
//! messages are declared here by hand (prost's derive, no generated code):
//! they are small and have not changed since v1alpha.

use prost::Message;
use prost_reflect::prost_types::FileDescriptorProto;

use crate::schema::Schema;

/// The reflection method's path, newest version first.
pub const PATHS: [&str; 2] = [
    "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
    "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
];

#[derive(Clone, PartialEq, Message)]
struct ServerReflectionRequest {
    #[prost(string, tag = "1")]
    host: String,
    #[prost(oneof = "Ask", tags = "3, 4, 7")]
    ask: Option<Ask>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Ask {
    #[prost(string, tag = "3")]
    FileByFilename(String),
    #[prost(string, tag = "4")]
    FileContainingSymbol(String),
    #[prost(string, tag = "7")]
    ListServices(String),
}

#[derive(Clone, PartialEq, Message)]
struct ServerReflectionResponse {
    #[prost(oneof = "Told", tags = "4, 6, 7")]
    told: Option<Told>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
enum Told {
    #[prost(message, tag = "4")]
    Files(FileDescriptorResponse),
    #[prost(message, tag = "6")]
    Services(ListServiceResponse),
    #[prost(message, tag = "7")]
    Error(ErrorResponse),
}

#[derive(Clone, PartialEq, Message)]
struct FileDescriptorResponse {
    #[prost(bytes = "vec", repeated, tag = "1")]
    file_descriptor_proto: Vec<Vec<u8>>,
}

#[derive(Clone, PartialEq, Message)]
struct ListServiceResponse {
    #[prost(message, repeated, tag = "1")]
    service: Vec<ServiceResponse>,
}

#[derive(Clone, PartialEq, Message)]
struct ServiceResponse {
    #[prost(string, tag = "1")]
    name: String,
}

#[derive(Clone, PartialEq, Message)]
struct ErrorResponse {
    #[prost(int32, tag = "1")]
    error_code: i32,
    #[prost(string, tag = "2")]
    error_message: String,
}

/// A request message of the exchange, encoded (without gRPC's frame).
pub fn list_services() -> Vec<u8> {
    ask(Ask::ListServices(String::new()))
}

fn ask(ask: Ask) -> Vec<u8> {
    ServerReflectionRequest {
        host: String::new(),
        ask: Some(ask),
    }
    .encode_to_vec()
}

/// Collects a schema from a server's answers.
#[derive(Debug, Default)]
pub struct Collector {
    files: Vec<FileDescriptorProto>,
    asked: Vec<String>,
}

/// What to ask next.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// These requests (encoded), one message each.
    Ask(Vec<Vec<u8>>),
    /// Nothing: the schema is whole.
    Done,
}

impl Collector {
    /// Read the answer to [`list_services`]: what to ask next (the file of
    /// each service but reflection's own).
    pub fn services(&mut self, answer: &[u8]) -> Result<Next, String> {
        let services = match told(answer)? {
            Told::Services(list) => list.service,
            other => return Err(unexpected(&other, "the list of services")),
        };
        let asks: Vec<Vec<u8>> = services
            .into_iter()
            .map(|s| s.name)
            .filter(|name| !name.starts_with("grpc.reflection."))
            .map(|name| ask(Ask::FileContainingSymbol(name)))
            .collect();
        if asks.is_empty() {
            return Err("the server's reflection lists no services".into());
        }
        Ok(Next::Ask(asks))
    }

    /// Read an answer of files: what to ask next (the imports not yet sent).
    pub fn files(&mut self, answer: &[u8]) -> Result<Next, String> {
        let files = match told(answer)? {
            Told::Files(files) => files.file_descriptor_proto,
            other => return Err(unexpected(&other, "file descriptors")),
        };
        for bytes in files {
            let file = FileDescriptorProto::decode(bytes.as_slice())
                .map_err(|e| format!("a file descriptor that does not decode: {e}"))?;
            if !self.files.iter().any(|f| f.name() == file.name()) {
                self.files.push(file);
            }
        }
        let missing: Vec<String> = self
            .files
            .iter()
            .flat_map(|f| f.dependency.iter())
            .filter(|dep| !self.files.iter().any(|f| f.name() == dep.as_str()))
            .filter(|dep| !self.asked.contains(dep))
            .cloned()
            .collect();
        let mut asks = Vec::new();
        for dep in missing {
            if !self.asked.contains(&dep) {
                asks.push(ask(Ask::FileByFilename(dep.clone())));
                self.asked.push(dep);
            }
        }
        Ok(if asks.is_empty() {
            Next::Done
        } else {
            Next::Ask(asks)
        })
    }

    /// The schema the answers make up.
    pub fn schema(self) -> Result<Schema, String> {
        Schema::from_files(self.files)
    }
}

fn told(answer: &[u8]) -> Result<Told, String> {
    let response = ServerReflectionResponse::decode(answer)
        .map_err(|e| format!("a reflection answer that does not decode: {e}"))?;
    match response.told {
        Some(Told::Error(error)) => Err(format!(
            "the reflection service answered error {}: {}",
            error.error_code, error.error_message
        )),
        Some(told) => Ok(told),
        None => Err("an empty reflection answer".into()),
    }
}

fn unexpected(told: &Told, expected: &str) -> String {
    let found = match told {
        Told::Files(_) => "file descriptors",
        Told::Services(_) => "a list of services",
        Told::Error(_) => "an error",
    };
    format!("the reflection service answered {found}, where {expected} was expected")
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost_reflect::prost_types::{
        DescriptorProto, MethodDescriptorProto, ServiceDescriptorProto,
    };

    fn answer(told: Told) -> Vec<u8> {
        ServerReflectionResponse { told: Some(told) }.encode_to_vec()
    }

    fn file(name: &str, deps: &[&str], service: Option<&str>) -> Vec<u8> {
        FileDescriptorProto {
            name: Some(name.into()),
            package: Some("p".into()),
            dependency: deps.iter().map(|d| (*d).to_owned()).collect(),
            message_type: vec![DescriptorProto {
                name: Some(format!("M{}", name.len())),
                ..Default::default()
            }],
            service: service
                .map(|s| ServiceDescriptorProto {
                    name: Some(s.into()),
                    method: vec![MethodDescriptorProto {
                        name: Some("Call".into()),
                        input_type: Some(format!(".p.M{}", name.len())),
                        output_type: Some(format!(".p.M{}", name.len())),
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .into_iter()
                .collect(),
            syntax: Some("proto3".into()),
            ..Default::default()
        }
        .encode_to_vec()
    }

    #[test]
    fn services_then_files_then_missing_imports_make_a_schema() {
        let mut collector = Collector::default();
        let services = answer(Told::Services(ListServiceResponse {
            service: vec![
                ServiceResponse { name: "p.S".into() },
                ServiceResponse {
                    name: "grpc.reflection.v1.ServerReflection".into(),
                },
            ],
        }));
        assert_eq!(
            collector.services(&services).unwrap(),
            Next::Ask(vec![ask(Ask::FileContainingSymbol("p.S".into()))])
        );
        let first = answer(Told::Files(FileDescriptorResponse {
            file_descriptor_proto: vec![file("s.proto", &["dep.proto"], Some("S"))],
        }));
        assert_eq!(
            collector.files(&first).unwrap(),
            Next::Ask(vec![ask(Ask::FileByFilename("dep.proto".into()))])
        );
        let dep = answer(Told::Files(FileDescriptorResponse {
            file_descriptor_proto: vec![file("dep.proto", &[], None)],
        }));
        assert_eq!(collector.files(&dep).unwrap(), Next::Done);
        let schema = collector.schema().unwrap();
        assert_eq!(schema.services(), vec!["p.S".to_owned()]);
    }

    #[test]
    fn errors_and_garbage_are_reported() {
        let mut collector = Collector::default();
        let error = answer(Told::Error(ErrorResponse {
            error_code: 5,
            error_message: "not found".into(),
        }));
        assert_eq!(
            collector.files(&error).unwrap_err(),
            "the reflection service answered error 5: not found"
        );
        assert!(collector.services(b"\xff").is_err());
        let none = answer(Told::Services(ListServiceResponse { service: vec![] }));
        assert!(collector.services(&none).is_err());
    }
}

#ifndef SLUICE_IO_DETERMINISTIC_PROTO_H_
#define SLUICE_IO_DETERMINISTIC_PROTO_H_

#include <string>

#include "google/protobuf/message_lite.h"

namespace sluice {

// `message`'s serialization with its map fields in key order. SerializeAsString writes a map in
// its hash order, which differs between processes: the same model saved twice gave two files.
// Empty when the message is over protobuf's 2 GiB (as SerializeAsString).
std::string SerializeDeterministically(const google::protobuf::MessageLite& message);

}  // namespace sluice

#endif  // SLUICE_IO_DETERMINISTIC_PROTO_H_

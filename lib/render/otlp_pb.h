/* SPDX-License-Identifier: MIT */
/*
 * otlp_pb.h - what the OTLP protobuf encoders share (otlp_pb.c, which also
 * compiles the generated code, and otlp_profiles.c): the generated
 * messages, and attributes of the model as KeyValue messages.
 */
#ifndef STACKPULSE_OTLP_PB_H
#define STACKPULSE_OTLP_PB_H

#include "opentelemetry/proto/common/v1/common.pb-c.h"
#include "opentelemetry/proto/resource/v1/resource.pb-c.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"
#include "otlpP.h"

typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;

/* Room for n attributes' messages, taken in order by otlp_pb_kvs(). */
struct otlp_kv_pool {
	KeyValue *kv;
	AnyValue *av;
	KeyValue **ptr;
	size_t n;
};

void otlp_pb_pool_init(struct otlp_kv_pool *p, size_t n);
void otlp_pb_pool_release(struct otlp_kv_pool *p);
/* The attributes a[0..n) as messages (pointing into a); returns the array
 * of their n pointers. */
KeyValue **otlp_pb_kvs(struct otlp_kv_pool *p, const struct otlp_attr *a, size_t n);

/* otlp_json.c: message m in OTLP/JSON. 0, or -1 when out has an error. */
int otlp_json_message(FILE *out, const ProtobufCMessage *m);

#endif

/* SPDX-License-Identifier: MIT */
/*
 * crc32c: CRC-32C (Castagnoli), the optional payload checksum of DATA
 * packets. Start with crc = 0; feed buffers in order.
 */
#ifndef UCCL_ENGINE_CRC32C_H
#define UCCL_ENGINE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

uint32_t crc32c(uint32_t crc, const void *buf, size_t len);
/* The table-driven path alone (crc32c() uses SSE4.2 where the CPU has it);
 * exposed so that both paths can be tested on any machine. */
uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t len);

#endif

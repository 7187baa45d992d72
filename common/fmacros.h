/* SPDX-License-Identifier: Apache-2.0 */
/* Feature-test macros. Every .c file includes this first, before any system header. */
#ifndef CRESCENT_COMMON_FMACROS_H
#define CRESCENT_COMMON_FMACROS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define _FILE_OFFSET_BITS 64

#endif

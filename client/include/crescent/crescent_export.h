/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Symbol visibility for libcrescent: the library is built with -fvisibility=hidden and a version
 * script; CRESCENT_API marks the functions it exports (CONTRIBUTING.md, "Build").
 */
#ifndef CRESCENT_CLIENT_CRESCENT_EXPORT_H
#define CRESCENT_CLIENT_CRESCENT_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define CRESCENT_API __attribute__((visibility("default")))
#else
#define CRESCENT_API
#endif

#endif

/*
 * api/i18n/particles.h — Korean particles after a value. A particle's form depends on
 * how the word before it ends when read aloud: 은/는, 이/가, 을/를, 과/와, 으로/로. A
 * Korean row that puts a particle after a value it cannot know (a printf conversion)
 * writes the combined form the language uses for that case, "은(는)", "이(가)", "을(를)",
 * "과(와)", "(으)로"; once the value is in, this picks the one form when the reading is
 * certain: a Hangul syllable (its final consonant), a number (its last digit read in
 * Sino-Korean: 1 일, 3 삼, 10 십 …), a lone Latin letter (its name: k 케이, l 엘, n 엔)
 * or one of attnd's own names (scale 스케일, mask 마스크). Any other English word keeps
 * the combined form: its reading is not in its spelling.
 */
#ifndef API_I18N_PARTICLES_H
#define API_I18N_PARTICLES_H

/* Rewrites s in place (it only shrinks). Text without a combined form is left as is. */
void api_ko_particles(char *s);

#endif
